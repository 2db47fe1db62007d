"""The adapter toolkit and the adapter declarations: the JSON reader's fallback to ``json``
names the file, every registry line matches its module, and the CLI hands an adapter exactly
the options (and the path) its declaration says it takes."""
from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest

from auditatlas import after_write, cli
from auditatlas.errors import InputError
from auditatlas.ingest import ADAPTERS, Adapter, Batch, Option, adapter
from auditatlas.ingest.kit import load_json, load_object, loads

FIXTURES = Path(__file__).resolve().parent / "fixtures"


# ------------------------------------------------------------------------------- JSON reading

def test_what_orjson_refuses_is_read_by_json(tmp_path):
    file = tmp_path / "nan.json"
    file.write_text('{"score": NaN, "big": 18446744073709551616, "neg": -9223372036854775809}')
    problems: list[InputError] = []
    value = load_json(file, problems)
    assert problems == []
    assert value["score"] != value["score"]  # NaN, as json reads the literal
    # orjson would read both as floats; the reference keeps them exact integers
    assert value["big"] == 2**64 and isinstance(value["big"], int)
    assert value["neg"] == -2**63 - 1 and isinstance(value["neg"], int)
    assert loads(b"[1, 2]") == [1, 2]


def test_a_parse_error_names_the_file_in_jsons_words(tmp_path):
    file = tmp_path / "run-7.json"
    file.write_text('{"history": [1, 2')
    problems: list[InputError] = []
    assert load_json(file, problems, expected="one run") is None
    (problem,) = problems
    assert problem.file == str(file) and problem.field is None
    assert str(problem) == f"{file}: is not valid JSON (Expecting ',' delimiter at line 1, column 18)."


def test_the_one_object_reader_names_the_file_as_given(tmp_path):
    file = tmp_path / "trace.json"
    file.write_text('{"config": {}, "room": {"x": Infinity}}')
    problems: list[InputError] = []
    assert load_object(str(file), "run_a/trace.json", problems, what="a test trace",
                       required=("config", "room", "trace")) is None
    assert [str(p) for p in problems] == [
        "run_a/trace.json: field 'trace': is missing; this is not a test trace (needs config, room and trace)."]


# ------------------------------------------------------------------------------- declarations

@pytest.mark.parametrize("fmt", sorted(ADAPTERS))
def test_each_registry_line_matches_its_module(fmt):
    module, spec = adapter(fmt), ADAPTERS[fmt]
    assert module.FORMAT == fmt
    assert spec.streams == hasattr(module, "plan")
    for function in [module.read] + ([module.plan] if spec.streams else []):
        keywords = inspect.signature(function).parameters
        assert all(name in keywords for name in spec.option_names), (fmt, function.__name__)


def test_catchbench_is_the_format_read_without_a_path():
    assert [f for f, spec in ADAPTERS.items() if not spec.needs_path] == ["catchbench"]
    assert ADAPTERS["catchbench"].options == () and ADAPTERS["predictions"].option_names == ("method", "seed")


# A stand-in adapter (this very module), registered for the CLI tests below.
FORMAT = "kit-test"
CALLS: list[tuple[Path | None, dict]] = []


def read(path: Path | None, context, *, shade: str | None = None, depth: int | None = None) -> Batch:
    CALLS.append((path, {"shade": shade, "depth": depth}))
    return Batch(source="kit-test", tables={})


@pytest.fixture
def registered(monkeypatch):
    CALLS.clear()
    monkeypatch.setitem(ADAPTERS, FORMAT, Adapter(__name__, needs_path=False, options=(
        Option("shade", str, "the shade"), Option("depth", int, "the depth"))))
    monkeypatch.setattr(after_write, "warm", lambda root, say: None)  # nothing derived to build for an empty source
    assert sys.modules[__name__] is adapter(FORMAT)


def test_declared_options_reach_the_adapter_through_the_cli(registered, tmp_path):
    folder = tmp_path / "release"
    folder.mkdir()
    code = cli.main(["--store", str(tmp_path / "store"), "ingest", FORMAT, str(folder),
                     "--shade", "teal", "--depth", "3"])
    assert code == 0
    assert CALLS == [(folder, {"shade": "teal", "depth": 3})]


def test_a_format_without_a_path_gets_none_and_no_options(registered, tmp_path):
    assert cli.main(["--store", str(tmp_path / "store"), "ingest", FORMAT]) == 0
    assert CALLS == [(None, {"shade": None, "depth": None})]


def test_an_option_of_another_format_is_refused_by_its_declaration(registered, tmp_path, capsys):
    code = cli.main(["--store", str(tmp_path / "store"), "ingest", "whowhen", str(FIXTURES / "whowhen"),
                     "--depth", "2"])
    assert code == 2 and CALLS == []
    assert "error: --shade and --depth apply to the kit-test format only." in capsys.readouterr().err


# ------------------------------------------------------------------------------- --workers 0

def test_workers_zero_means_this_process_only(tmp_path, monkeypatch, capsys):
    """``--workers 0`` is accepted by ingest and demo and converts in this process: no cluster."""
    import auditatlas.cluster
    from auditatlas.ingest import stream

    def no_cluster(*args, **kwargs):
        raise AssertionError("--workers 0 started a cluster")

    monkeypatch.setattr(auditatlas.cluster, "get_client", no_cluster)
    monkeypatch.setattr(stream, "AUTO_PARALLEL_CHUNKS", 1)  # without --workers, even one chunk would go parallel
    monkeypatch.setattr(after_write, "warm", lambda root, say: None)
    store = str(tmp_path / "store")
    assert cli.main(["--store", store, "ingest", "maadbench", str(FIXTURES / "maadbench"), "--workers", "0"]) == 0
    assert cli.main(["--store", store, "ingest", "whowhen", str(FIXTURES / "whowhen"), "--workers", "0"]) == 0
    out = capsys.readouterr().out
    assert "ingested maadbench" in out and "ingested whowhen" in out
    assert cli._parser().parse_args(["demo", "--workers", "0"]).workers == 0
    assert json.loads((tmp_path / "store" / "MANIFEST.json").read_text())["sources"]["maadbench"]["runs"] == 5
