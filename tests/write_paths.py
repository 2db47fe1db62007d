"""Every write path of the store as a numbered sequence of writes, for the kill and race tests.

Each path (``ingest otlp``, ``ingest traces``, ``ingest labels``, ``ingest reviews``,
``tours import``, and verdicts as /review writes them) writes its i-th input with
:func:`write`, and :func:`landed` says, from the store alone, which writes of a writer are in
it, and whether any is there only in part. A write is identified by what it adds: a corpus of its
own, verdict ids of its own, a tour name of its own; a labels file (which replaces the corpus's
labels) by the exact set of steps it labels.

Run as a program (``python write_paths.py PATH STORE WORK TAG N``), it is a writer in a process
of its own: it prints ``ready`` once imported, then ``done i`` after each write the store
acknowledged (the command returned 0), so a test can kill it with SIGKILL at any moment and know
which writes were acknowledged.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

PATHS = ("otlp", "traces", "labels", "reviews", "tours", "verdicts")
CORPUS = "mine"  # the OTLP corpus labels and verdicts are given on
VERDICTS_PER_WRITE = 3


def base_store(root: Path) -> Path:
    """A store holding the OTLP corpus ``mine`` (two traces, 11 steps)."""
    from auditatlas.ingest import ingest
    from otlp_fixtures import genai_trace, openinference_trace, write_json

    root.parent.mkdir(parents=True, exist_ok=True)
    spans = write_json(root.parent / "base-spans.json", openinference_trace() + genai_trace())
    ingest("otlp", spans, root, corpus=CORPUS)
    return root


def _steps(root: Path) -> list[tuple[str, int]]:
    import queries

    con = queries.connect(root)
    try:
        return [tuple(r) for r in con.execute("SELECT run_id, step_idx FROM steps WHERE corpus = ? "
                                               "ORDER BY run_id, step_idx", [CORPUS]).fetchall()]
    finally:
        con.close()


def labeled_by(tag: str, i: int, steps: list[tuple[str, int]]) -> set[tuple[str, int]]:
    """The steps the labels file ``tag``/``i`` labels: a set of its own size (A: 1-5, B: 6-10)."""
    n = (i % 5) + 1 + (5 if tag == "B" else 0)
    return set(steps[:min(n, len(steps))])


def _input(path: str, root: Path, work: Path, tag: str, i: int) -> list[str]:
    """The command line (or, for verdicts, the marker ``verdicts``) of write ``i`` of writer ``tag``."""
    work.mkdir(parents=True, exist_ok=True)
    name = f"{tag.lower()}{i}"
    if path == "otlp":
        from otlp_fixtures import openinference_trace, write_json

        trace = f"{(ord(tag) * 1000 + i):032x}"
        file = write_json(work / f"{name}.json", openinference_trace(trace))
        return ["ingest", "otlp", str(file), "--corpus", f"live-{name}"]
    if path == "traces":
        doc = {"schema_version": "ATIF-v1.7", "session_id": name, "agent": {"name": "helper", "version": "1"},
               "steps": [{"step_id": k + 1, "source": ("user", "agent")[k % 2], "message": f"m{k}"} for k in range(6)]}
        file = work / f"{name}.json"
        file.write_text(json.dumps(doc))
        return ["ingest", "traces", str(file), "--corpus", f"traj-{name}"]
    if path == "labels":
        steps = _steps(root)
        file = work / f"{name}.csv"
        file.write_text("run_id,step_idx,label,note\n" + "".join(
            f"{run},{idx},1,{name}\n" for run, idx in sorted(labeled_by(tag, i, steps))))
        return ["ingest", "labels", str(file), "--corpus", CORPUS]
    if path == "reviews":
        file = work / f"{name}.csv"
        file.write_text("verdict_id,run_id,step_idx,verdict,reviewer,reviewed_at\n" + "".join(
            f"{name}-{k},{run},{idx},anomaly,{tag},2026-01-01T00:00:0{k}Z\n"
            for k, (run, idx) in enumerate(_steps(root)[:VERDICTS_PER_WRITE])))
        return ["ingest", "reviews", str(file)]
    if path == "tours":
        file = work / f"{name}.json"
        file.write_text(json.dumps({"name": f"tour-{name}", "stops": [
            {"link": "/boards?tab=LIVE", "sentence": f"{name} one"}, {"link": "/", "sentence": f"{name} two"}]}))
        return ["tours", "import", str(file)]
    return ["verdicts", name]


def write(path: str, root: Path, work: Path, tag: str, i: int) -> int:
    """Write ``i`` of writer ``tag`` on ``path``; the command's exit code."""
    argv = _input(path, root, work, tag, i)
    if argv[0] == "verdicts":
        from auditatlas import verdicts

        rows = [{**verdicts.verdict(CORPUS, run, idx, "normal", tag, reviewed_at=f"2026-01-01T00:00:0{k}Z"),
                 "verdict_id": f"v-{argv[1]}-{k}"} for k, (run, idx) in enumerate(_steps(root)[:VERDICTS_PER_WRITE])]
        verdicts.append_verdicts(root, rows)
        return 0
    from auditatlas.cli import main

    return main(["--store", str(root), *argv])


def landed(path: str, root: Path, tag: str, n: int) -> tuple[set[int], set[int]]:
    """Which of writes 0..n-1 of writer ``tag`` the store holds whole, and which only in part."""
    import queries

    con = queries.connect(root)
    whole, part = set(), set()

    def count(sql: str, params: list) -> int:
        return con.execute(sql, params).fetchall()[0][0]

    try:
        for i in range(n):
            name = f"{tag.lower()}{i}"
            if path in ("otlp", "traces"):
                corpus = f"{'live' if path == 'otlp' else 'traj'}-{name}"
                got = (count("SELECT count(*) FROM corpora WHERE corpus = ?", [corpus]),
                       count("SELECT count(*) FROM runs WHERE corpus = ?", [corpus]),
                       count("SELECT count(*) FROM steps WHERE corpus = ?", [corpus]))
                want = (1, 1, 6)
            elif path in ("reviews", "verdicts"):
                prefix = f"v-{name}-" if path == "verdicts" else f"{name}-"
                got = count("SELECT count(*) FROM verdicts WHERE starts_with(verdict_id, ?)", [prefix])
                want = VERDICTS_PER_WRITE
            elif path == "tours":
                got = count("SELECT count(*) FROM tours WHERE name = ?", [f"tour-{name}"])
                want = 2
            else:  # labels: the set of labeled steps and their note say which file is loaded
                rows = con.execute("SELECT run_id, step_idx, json_extract_string(extra, '$.label_file.note') "
                                   "FROM steps WHERE corpus = ? AND label_source = 'labels_file'", [CORPUS]).fetchall()
                notes = {r[2] for r in rows}
                if notes == {name}:
                    steps = _steps(root)
                    (whole if {(r[0], r[1]) for r in rows} == labeled_by(tag, i, steps) else part).add(i)
                elif name in notes:
                    part.add(i)
                continue
            if got == want:
                whole.add(i)
            elif got not in (0, (0, 0, 0)):
                part.add(i)
    finally:
        con.close()
    return whole, part


def leftovers(root: Path) -> list[str]:
    """What an interrupted write left in the store that the next write must clean."""
    from auditatlas.store import STAGING_PREFIX, TMP_PREFIX, read_manifest

    found = [p.name for p in root.iterdir() if p.name.startswith((STAGING_PREFIX, TMP_PREFIX, ".manifest-"))]
    live = {Path(e["dir"]).name for e in read_manifest(root)["sources"].values()}
    retired = {Path(e["dir"]).name for e in read_manifest(root)["retired"]}
    found += [f"sources/{p.name}" for p in (root / "sources").iterdir() if p.name not in live | retired]
    return found


if __name__ == "__main__":
    path, store, work, tag, n = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    import auditatlas.cli  # noqa: F401 - imported before "ready": the kill lands in writes, not imports
    import queries  # noqa: F401

    print("ready", flush=True)
    for i in range(n):
        with contextlib.redirect_stdout(io.StringIO()):  # the command's own lines: not the markers
            code = write(path, store, work, tag, i)
        if code != 0:
            print(f"failed {i} {code}", flush=True)
            sys.exit(code)
        print(f"done {i}", flush=True)
