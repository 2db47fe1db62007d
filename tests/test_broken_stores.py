"""Every kind of broken store is one sentence on every CLI subcommand and every app page.

Stores are tiny (a source of one run written with ``write_source``) and broken by hand. The
CLI runs in this process (``auditatlas.cli.main``), except for the kinds that need a folder its
reader may not enter: the tests run as root, whom ``chmod 000`` does not stop, so those run in a
subprocess without the two capabilities that let root read anything (``setpriv
--bounding-set=-dac_override,-dac_read_search``): still uid 0, but held to the permission bits.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditatlas import store
from auditatlas.cli import main
from conftest import REPO

WHOWHEN_FIXTURE = str(REPO / "tests" / "fixtures" / "whowhen")

# Every subcommand `auditatlas --help` lists, with arguments that keep it fast on a tiny store.
COMMANDS: dict[str, list[str]] = {
    "ingest": ["ingest", "whowhen", WHOWHEN_FIXTURE],
    "demo": ["demo", "--rooms", "3"],
    "remove": ["remove", "alpha"],
    "info": ["info"],
    "warm": ["warm"],
    "board": ["board", "live"],
    "score": ["score", "--detector", "ecod", "--workers", "0"],
    "cross-backbone": ["cross-backbone", "--detector", "ecod", "--workers", "0"],
    "detectors": ["detectors"],
}
# Kinds that break the store itself (every command that touches it refuses) and kinds that break
# one source (writes still land, and say what they could not do; reads name the source).
STORE_KINDS = ("file", "under-a-file", "unreadable-store", "manifest", "old-format")
SOURCE_KINDS = ("unreadable-source", "truncated-parquet", "missing-parquet", "missing-folder")
PERMISSION_KINDS = ("unreadable-store", "unreadable-source")
KINDS = STORE_KINDS + SOURCE_KINDS + ("truncated-derived",)


def tiny_store(root: Path) -> Path:
    """One source, ``alpha``: one run of two steps, one anomalous."""
    store.write_source(root, "alpha", {
        "runs": [{"run_id": "a:1", "corpus": "a", "outcome": "failure", "n_steps": 2}],
        "steps": [{"run_id": "a:1", "corpus": "a", "step_idx": i, "action": "A", "label": i} for i in range(2)],
    })
    return root


_BUILT: list[Path] = []  # the module's one tiny store, built by _tiny_template


@pytest.fixture(scope="module", autouse=True)
def _tiny_template(tmp_path_factory):
    """Build the tiny store once for the module: the ~200 cases each break a copy of it (a write
    with its checks costs 0.15 CPU-s; a copy of its few files, nothing)."""
    _BUILT[:] = [tiny_store(tmp_path_factory.mktemp("tiny") / "store")]
    yield
    _BUILT.clear()


def fresh_tiny_store(root: Path) -> Path:
    """A store at ``root`` as ``tiny_store`` writes it: a copy of the module's one build."""
    if not _BUILT:
        return tiny_store(root)
    shutil.copytree(_BUILT[0], root)
    return root


def break_store(kind: str, root: Path) -> tuple[Path, str]:
    """Break ``root`` one way: the store path to use and a phrase its one sentence contains."""
    folder = root / store.read_manifest(root)["sources"]["alpha"]["dir"]
    if kind == "file":
        shutil.rmtree(root)
        root.write_text("not a store")
        return root, "is a file, not a store folder"
    if kind == "under-a-file":
        shutil.rmtree(root)
        root.write_text("not a store")
        return root / "store", "Not a directory"
    if kind == "unreadable-store":
        root.chmod(0)
        return root, "Permission denied"
    if kind == "manifest":
        (root / store.MANIFEST).write_text("{not json")
        return root, "is corrupt"
    if kind == "old-format":
        manifest = json.loads((root / store.MANIFEST).read_text())
        manifest["format"] = 1
        (root / store.MANIFEST).write_text(json.dumps(manifest))
        return root, "older Audit Atlas"
    if kind == "unreadable-source":
        folder.chmod(0)
        return root, f"its folder {folder} cannot be read"
    if kind == "truncated-parquet":
        part = next((folder / "runs").glob("part-*.parquet"))
        part.write_bytes(part.read_bytes()[:40])
        return root, "is corrupt (not readable Parquet)"
    if kind == "missing-parquet":
        for part in (folder / "steps").glob("part-*.parquet"):
            part.unlink()
        return root, "has no Parquet file for table 'steps'"
    if kind == "missing-folder":
        shutil.rmtree(folder)
        return root, "its folder"
    if kind == "truncated-derived":
        return root, truncate_derived(root)
    raise AssertionError(kind)


def truncate_derived(root: Path) -> str:
    """Build the derived tables of the store's version (in a database of its own, so this
    process's query layer has not bound them), then cut two of their files short."""
    import queries.database

    db = queries.database.Database(root.resolve())
    with db.reading(derived=True) as version:
        folder = version.derived
    assert folder, "the derived tables of the tiny store were not built"
    for name in ("test_scores", "slice_choices"):  # one read from its file, one held in memory
        path = folder / f"{name}.parquet"
        path.write_bytes(path.read_bytes()[:30])
    return str(folder)


def derived_readable(root: Path) -> bool:
    """Whether every derived build of the store can be read (a truncated one was rebuilt)."""
    from queries import derived

    builds = [p for p in (root / "derived").iterdir() if not p.name.startswith(".")]
    return bool(builds) and all(derived.is_readable(p) for p in builds)


def restore_permissions(root: Path) -> None:
    if root.is_dir():
        root.chmod(0o755)
        for path in root.rglob("*"):
            if path.is_dir():
                path.chmod(0o755)


@contextlib.contextmanager
def broken(tmp_path: Path, kind: str):
    root = fresh_tiny_store(tmp_path / "store")
    path, phrase = break_store(kind, root)
    try:
        yield path, phrase
    finally:
        restore_permissions(root)


# ---------------------------------------------------------------------------------- the CLI

RUN_COMMANDS = """
import contextlib, io, json, sys, traceback
from auditatlas.cli import main
root, commands = sys.argv[1], json.loads(sys.argv[2])
out = {}
for name, args in commands.items():
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(["--store", root, *args])
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            code, stderr = "raised", io.StringIO(stderr.getvalue() + traceback.format_exc())
    out[name] = {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
print(json.dumps(out))
"""

WITHOUT_ROOTS_READS = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _permission_checks_work(tmp_path: Path) -> bool:
    if shutil.which("setpriv") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "x").write_text("x")
    probe.chmod(0)
    try:
        done = subprocess.run([*WITHOUT_ROOTS_READS, sys.executable, "-c", f"open({str(probe / 'x')!r})"],
                              capture_output=True, timeout=60)
        return done.returncode != 0 and b"PermissionError" in done.stderr
    except OSError:
        return False
    finally:
        probe.chmod(0o755)


def run_in_process(root: Path, args: list[str], capsys) -> dict:
    capsys.readouterr()
    try:
        code = main(["--store", str(root), *args])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return {"code": code, "stdout": captured.out, "stderr": captured.err}


def run_without_root_reads(root: Path, commands: dict[str, list[str]], tmp_path: Path) -> dict[str, dict]:
    if not _permission_checks_work(tmp_path):
        pytest.skip("setpriv cannot drop root's read capabilities here: no way to make a folder unreadable to root")
    done = subprocess.run([*WITHOUT_ROOTS_READS, sys.executable, "-c", RUN_COMMANDS, str(root), json.dumps(commands)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_outcome(kind: str, command: str, outcome: dict, phrase: str, path: Path) -> None:
    code, err = outcome["code"], outcome["stderr"]
    assert code != "raised" and "Traceback" not in err, err
    if command == "detectors":  # the registry: never reads the store
        assert code == 0 and "ecod" in outcome["stdout"]
        return
    if kind == "truncated-derived":  # a cache: rebuilt, never a message
        assert "corrupt" not in err and "cannot be read" not in err, err
        return
    if kind in SOURCE_KINDS and command == "remove":  # removing the broken source repairs the store
        assert code == 0 and store.health(path, deep=True) == []
        return
    assert phrase in err, err
    if kind in STORE_KINDS:
        assert code == 1
        assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    elif command == "ingest":  # landed, and says what it could not do after
        assert code == 0 and "written, but" in err
        assert "whowhen" in store.read_manifest(path)["sources"]
    elif command == "info":  # the broken source named; what can be listed is
        assert code in (0, 1) and "alpha" in err
    else:  # reads answer nothing without the source; the demo does not start
        assert code == 1


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", [k for k in KINDS if k not in PERMISSION_KINDS])
def test_cli_on_a_broken_store_says_one_sentence(tmp_path, kind, command, capsys):
    with broken(tmp_path, kind) as (path, phrase):
        before = (path / store.MANIFEST).read_bytes() if (path / store.MANIFEST).is_file() else None
        outcome = run_in_process(path, COMMANDS[command], capsys)
        check_outcome(kind, command, outcome, phrase, path)
        if command == "demo" and before is not None:
            assert (path / store.MANIFEST).read_bytes() == before  # refused before anything was written


@pytest.mark.parametrize("kind", PERMISSION_KINDS)
def test_cli_on_an_unreadable_store_says_one_sentence(tmp_path, kind):
    """Every subcommand in one subprocess held to the permission bits (see the module docstring)."""
    # One after another on the same store: the remove (which repairs it) goes last.
    commands = {name: args for name, args in COMMANDS.items() if name != "remove"} | {"remove": COMMANDS["remove"]}
    with broken(tmp_path, kind) as (path, phrase):
        outcomes = run_without_root_reads(path, commands, tmp_path)
    # Checked with the permissions restored: a landed ingest or remove is read back as root.
    assert list(outcomes) == list(commands)
    for command, outcome in outcomes.items():
        check_outcome(kind, command, outcome, phrase, path)


def test_a_truncated_derived_file_is_rebuilt_for_the_next_query(tmp_path):
    import queries

    root = tiny_store(tmp_path / "store")
    truncate_derived(root)
    choices = queries.run("slice_options", {}, root=root)
    assert set(choices.value.astype(str)) >= {"a"}
    assert derived_readable(root)


# ---------------------------------------------------------------------------------- the app

PAGES = ("pages/overview.py", "pages/boards.py", "pages/explorer.py", "pages/propagation.py",
         "pages/detectors.py", "pages/rescore.py")

RUN_PAGES = """
import functools, json, os, sys
from streamlit.testing.v1 import AppTest
from streamlit.components.v2 import manifest_scanner  # scanned once, as conftest does in process
manifest_scanner.scan_component_manifests = functools.lru_cache(None)(manifest_scanner.scan_component_manifests)
out = {}
for page in json.loads(sys.argv[1]):
    at = AppTest.from_file("app.py", default_timeout=240)
    at.switch_page(page)
    at.run()
    out[page] = {"exception": [str(e.value) for e in at.exception], "errors": [e.value for e in at.error]}
print(json.dumps(out))
"""


def check_page(kind: str, result: dict, phrase: str) -> None:
    assert not result["exception"], result["exception"]
    errors = " ".join(result["errors"]).replace("\\", "")
    if kind == "truncated-derived":
        assert "corrupt" not in errors and "cannot be read" not in errors, errors
    else:
        assert phrase.replace("\\", "") in errors, errors


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("kind", [k for k in KINDS if k not in PERMISSION_KINDS])
def test_app_page_on_a_broken_store_shows_one_sentence(tmp_path, kind, page, monkeypatch):
    from streamlit.testing.v1 import AppTest

    with broken(tmp_path, kind) as (path, phrase):
        monkeypatch.setenv("AUDITATLAS_STORE", str(path))
        monkeypatch.chdir(REPO)
        # Straight to the page: the first run of app.py would draw the Overview too.
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=240)
        at.switch_page(page)
        at.run()
        check_page(kind, {"exception": [str(e.value) for e in at.exception], "errors": [e.value for e in at.error]},
                   phrase)
        if kind == "truncated-derived":
            assert derived_readable(path)


@pytest.mark.parametrize("kind", PERMISSION_KINDS)
def test_app_pages_on_an_unreadable_store_show_one_sentence(tmp_path, kind):
    with broken(tmp_path, kind) as (path, phrase):
        if not _permission_checks_work(tmp_path):
            pytest.skip("setpriv cannot drop root's read capabilities here")
        done = subprocess.run([*WITHOUT_ROOTS_READS, sys.executable, "-c", RUN_PAGES, json.dumps(PAGES)],
                              cwd=REPO, capture_output=True, text=True, timeout=900,
                              env={**os.environ, "PYTHONPATH": str(REPO), "AUDITATLAS_STORE": str(path)})
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(results) == set(PAGES)
    for result in results.values():
        check_page(kind, result, phrase)
