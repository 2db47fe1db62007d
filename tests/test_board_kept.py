"""The boards' default view kept per store version (queries/kept.py, analyses/board_kept.py):
read back as computed, never read for another version, code, slice or label choice, and what a
write (CLI, first launch) leaves for the first open of /boards. Expected values are the golden
board's (tests/test_boards.py), not recomputed here."""
from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest

from app_support import open_page, page_texts
from auditatlas.analyses import board_kept, board_registry
from auditatlas.analyses.board_published import reconcile
from auditatlas.analyses.board_registry import run_board
from auditatlas.errors import AtlasError
from auditatlas.ingest import ingest
from conftest import WHOWHEN
from queries import kept, runner
from test_boards import POST_PUBLISHED

pytestmark = pytest.mark.skipif(not WHOWHEN.exists(), reason="needs ../shared/data/whowhen")


@pytest.fixture(scope="module")
def released() -> Path:
    """CatchBench's release (the PRE board, 110 published cells) and Who&When (POST
    localization), built once for the session; each test copies it."""
    from stores import shared_store

    return shared_store("released")


@pytest.fixture
def store(released, tmp_path) -> Path:
    return Path(shutil.copytree(released, tmp_path / "store"))


def recorded(root: Path, log: list[bool]):
    """``kept.remember`` bound to ``root``, noting for each call whether it read a kept result."""
    def remember(name, compute):
        value, read = kept.remember(root, name, compute)
        log.append(read)
        return value, read
    return remember


def refuse_scoring(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("scored the board, where a kept one was expected")
    monkeypatch.setattr(board_registry, "run_board", refuse)
    monkeypatch.setattr(board_kept, "run_board", refuse)


def test_a_kept_board_reads_back_as_it_was_computed(store):
    log: list[bool] = []
    first, _ = board_kept.board("post-localization", runner(store), "whowhen", None, recorded(store, log))
    again, cells = board_kept.board("post-localization", runner(store), "whowhen", None, recorded(store, log))
    assert log == [False, True]
    computed = run_board("post-localization", runner(store), "whowhen")
    assert [r.entrant for r in again.rows] == [r.entrant for r in computed.rows]
    assert [r.metrics for r in again.rows] == [r.metrics for r in computed.rows]
    assert [(r.role, r.kind, r.n_items, r.seed_group, r.seed) for r in again.rows] == \
        [(r.role, r.kind, r.n_items, r.seed_group, r.seed) for r in computed.rows]
    got = [(c.family, c.a_name, c.b_name, c.p_adj, c.verdict) for c in again.contrasts]
    assert got == [(c.family, c.a_name, c.b_name, c.p_adj, c.verdict) for c in computed.contrasts]
    assert again.metrics == computed.metrics and again.notes == computed.notes and again.n_items == 126 == computed.n_items
    rows = {r.entrant: r.metrics for r in again.rows}
    for entrant, values in POST_PUBLISHED.items():  # the golden board's numbers, read from the kept file
        assert tuple(round(rows[entrant][m], 3) for m in ("top1", "top3", "mrr")) == values, entrant
    assert cells == reconcile(computed, runner(store))


def test_the_pre_boards_published_cells_all_match_when_read_back(store, monkeypatch):
    board_kept.board("pre", runner(store), "catchbench-pre", None, partial(kept.remember, store))
    refuse_scoring(monkeypatch)
    result, cells = board_kept.board("pre", runner(store), "catchbench-pre", None, partial(kept.remember, store))
    assert result.n_items == 1187 and result.floor == "flag_all"
    assert len(cells) == 110 and all(c.matches for c in cells)  # 11 entrants x (4 pooled metrics + 6 sources)
    judge = next(c for c in result.contrasts if c.a_name == "llm_judge_needed(llama-3.3-70b)")
    assert judge.verdict == "separates" and judge.diff == pytest.approx(0.695 - 0.601, abs=0.001)


def test_another_version_another_code_a_slice_or_a_label_choice_is_scored_again(store, monkeypatch):
    remember = partial(kept.remember, store)
    board_kept.board("post-localization", runner(store), "whowhen", None, remember)
    key = kept.version_key(store)
    scored: list[str] = []
    real = board_registry.run_board

    def counting(name, query, corpus=None, slice_=None):
        scored.append(json.dumps(slice_))
        return real(name, query, corpus, slice_)
    monkeypatch.setattr(board_kept, "run_board", counting)
    board_kept.board("post-localization", runner(store), "whowhen", None, remember)
    assert scored == []  # read
    board_kept.board("post-localization", runner(store), "whowhen", {"domain": ["GAIA"]}, remember)
    board_kept.board("post-localization", runner(store), "whowhen", {"labels": "reviewed"}, remember)
    assert len(scored) == 2
    monkeypatch.setattr(kept, "code_digest", lambda: "an edited analysis")
    assert kept.version_key(store) != key
    board_kept.board("post-localization", runner(store), "whowhen", None, remember)
    assert len(scored) == 3
    monkeypatch.undo()
    ingest("catchbench", None, store)  # a write: a new manifest
    assert kept.version_key(store) not in (None, key)
    monkeypatch.setattr(board_kept, "run_board", counting)
    board_kept.board("post-localization", runner(store), "whowhen", None, remember)
    assert len(scored) == 4


def test_a_write_while_scoring_keeps_nothing(store):
    def write_meanwhile():
        ingest("catchbench", None, store)
        return {"a": 1}
    value, read = kept.remember(store, "board/x/y", write_meanwhile)
    assert value == {"a": 1} and not read
    assert kept.read(store, kept.version_key(store), "board/x/y") is None
    assert not list((kept.home(store)).glob("*/*.json"))


def test_a_truncated_kept_file_is_scored_and_written_again(store):
    remember = partial(kept.remember, store)
    board_kept.board("post-localization", runner(store), "whowhen", None, remember)
    (path,) = kept.home(store).glob("*/*.json")
    path.write_bytes(path.read_bytes()[:100])
    result, _ = board_kept.board("post-localization", runner(store), "whowhen", None, remember)
    assert result.n_items == 126
    assert json.loads(path.read_bytes())["name"] == "board/post-localization/whowhen"


def test_old_versions_are_removed_past_the_newest_three(store):
    for n in range(6):
        assert kept.write(store, f"version{n}", "board/a/b", [n])
    assert len(list(kept.home(store).iterdir())) == 1 + kept.KEEP


def test_an_untrusted_corpus_name_stays_inside_the_folder():
    name = "board/post/../../etc/passwd <script>"
    assert "/" not in kept.file_name(name) and ".." not in kept.file_name(name).removesuffix(".json")
    assert kept.file_name(name) != kept.file_name("board/post/etc/passwd")


def test_the_setting_takes_0_or_1_only(monkeypatch):
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "yes")
    with pytest.raises(AtlasError, match="AUDITATLAS_KEEP_BOARDS must be 0 or 1, not 'yes'"):
        board_kept.keeps_after_write()
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "0")
    assert not board_kept.keeps_after_write()


def test_a_cli_write_keeps_every_board_and_the_page_reads_them(store, monkeypatch):
    from auditatlas.cli import main

    shutil.rmtree(kept.home(store), ignore_errors=True)
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    assert main(["--store", str(store), "ingest", "whowhen", str(WHOWHEN)]) == 0
    names = {json.loads(p.read_bytes())["name"] for p in kept.home(store).glob("*/*.json")}
    assert names == {"board/pre/catchbench-pre", "board/post-localization/whowhen"}
    refuse_scoring(monkeypatch)
    at = open_page(store, monkeypatch, "pages/boards.py", tab="POST")
    text = page_texts(at)
    assert "rests on **126 failed runs**" in text, text
    shown = {tuple(r) for frame in at.dataframe for r in frame.value.astype(str).itertuples(index=False)}
    assert any("position" in row and "0.159" in row for row in shown), shown


def kept_names(store: Path, key: str) -> set[str]:
    return {json.loads(p.read_bytes())["name"] for p in (kept.home(store) / key).glob("*.json")}


def test_warm_keeps_every_board_again_after_an_upgrade_and_the_page_reads_them(store, monkeypatch, capsys):
    from auditatlas.cli import main

    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    before = kept.version_key(store)
    assert kept_names(store, before) == set()  # the fixture's store: ingested with nothing kept
    # An upgrade: the same store version read by other code is another key, with nothing kept.
    monkeypatch.setattr(kept, "code_digest", lambda: "an-upgraded-analysis")
    after = kept.version_key(store)
    assert after != before and kept_names(store, after) == set()
    capsys.readouterr()
    assert main(["--store", str(store), "warm"]) == 0
    assert f"built what the store at {store} needs for this code." in capsys.readouterr().out
    assert kept_names(store, after) == {"board/pre/catchbench-pre", "board/post-localization/whowhen"}
    refuse_scoring(monkeypatch)
    text = page_texts(open_page(store, monkeypatch, "pages/boards.py", tab="POST"))
    assert "rests on **126 failed runs**" in text, text


def test_warm_refuses_a_store_it_cannot_read(tmp_path, capsys):
    from auditatlas.cli import main

    (tmp_path / "MANIFEST.json").write_text("{not json")
    assert main(["--store", str(tmp_path), "warm"]) == 1
    err = capsys.readouterr().err
    assert "MANIFEST.json" in err and "Traceback" not in err, err


def test_a_server_start_warms_a_store_kept_by_other_code_and_only_then(tmp_path, monkeypatch):
    import subprocess

    from components import serve

    store = tmp_path / "store"
    ingest("catchbench", None, store)  # the PRE board alone: the warm's own run stays short
    monkeypatch.setenv("AUDITATLAS_STORE", str(store))
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "0")
    started: list = []
    real_popen = subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(real_popen(*a, **k)) or started[-1])
    assert serve._warm_if_stale() is None and started == []  # the test suite's setting: nothing is started
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    warm = serve._warm_if_stale()
    assert started == [warm]
    assert warm.wait(timeout=240) == 0
    assert kept_names(store, kept.version_key(store)) == {"board/pre/catchbench-pre"}
    assert serve._warm_if_stale() is None and len(started) == 1  # kept for this code now: nothing runs
