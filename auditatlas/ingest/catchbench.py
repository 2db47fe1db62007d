"""CatchBench release adapter (PyPI ``catchbench==0.1.3``): PRE configs, judge caches, board.

The release ships its data inside the installed package; with no path we read
``importlib.resources.files("catchbench") / "data"`` (data files only, never its code). A path
may point at a folder laid out like that ``data/`` folder instead.

What lands in the store (one source, ``catchbench``, rows of several corpora):

- ``catchbench-pre``: one config per PRE record and one capability per declared capability,
  plus the held-out PRE judge ``llm_judge_needed(<model>)`` as config-level predictions. A
  config the judge file does not name is an abstention: it gets no rows, so it leaves the
  judge's denominator instead of counting as "flagged nothing".
- ``whowhen``: every Who&When localization judge cache (31 board files, 12 addendum files) as a
  step-level prediction set whose rows go to ``rankings`` exactly as released, keyed by the
  run key the file uses. The ``predictions`` view resolves them against Who&When runs, so it
  does not matter whether the traces or the judges were ingested first.
- ``published_values``: the golden board text parsed into (board, corpus, entrant, metric).
"""
from __future__ import annotations

import json
import re
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ..errors import IngestFailed, InputError
from . import Batch, Context
from .golden_board import PRE_CORPUS, WHOWHEN_CORPUS, parse_board
from .kit import is_count, json_text, load_json, show

FORMAT = "catchbench"
SOURCE = "catchbench"
PRE_TITLE = "CatchBench PRE configurations"
PRE_LABEL_PROCESS = "mixed: llm_judge, roster_relabel, declared_minus_used, synthetic_inject"
PRE_DESCRIPTION = (
    "Declared agent configurations (CrewAI, n8n, MCP, InjecAgent, SWE-agent, synthetic) with "
    "the capabilities each declares and which of them exceed what the task needs."
)

_JUDGE_FILE = re.compile(r"^whoandwhen__(?P<protocol>[a-z_]+?)__(?P<model>.+)\.json$")
_SIDECAR_SUFFIX = ".sidecar.json"


# --------------------------------------------------------------------------- entry points

def can_read(path: Path) -> bool:
    """A folder laid out like the package's ``data/`` (it has ``pre/`` or ``llm_judge/``)."""
    path = Path(path)
    return path.is_dir() and any((path / part).is_dir() for part in ("pre", "llm_judge", "llm_judge_addendum"))


def read(path: Path | None, context: Context) -> Batch:
    """Convert the whole release (installed package data when ``path`` is None)."""
    root = _data_root(path)
    problems: list[InputError] = []
    notes: list[str] = []

    configs, capabilities, declared = _read_pre(root, problems)
    pre_sets, pre_predictions = _read_pre_judges(root, declared, problems, notes)
    judge_sets, rankings = _read_whowhen_judges(root, problems)
    published = _read_golden(root, problems, notes)

    if not problems and not (configs or judge_sets or published):
        problems.append(InputError(_where(root), None,
                                   "holds no CatchBench data (no pre/*.json, llm_judge/ caches or golden/board.txt)."))
    if problems:
        raise IngestFailed(problems)

    corpora = [_pre_corpus_row()] if configs else []
    tables = {
        "corpora": corpora,
        "configs": configs,
        "capabilities": capabilities,
        "prediction_sets": pre_sets + judge_sets,
        "predictions": pre_predictions,
        "rankings": rankings,
        "published_values": published,
    }
    return Batch(source=SOURCE, tables=tables, notes=notes, meta=_meta(path))


# --------------------------------------------------------------------------- locating data

def _data_root(path: Path | None) -> Traversable:
    if path is None:
        return resources.files("catchbench") / "data"
    path = Path(path)
    # Accept the package folder itself as a convenience: its data sits one level down.
    if not can_read(path) and can_read(path / "data"):
        return path / "data"
    return path


def _where(node: Traversable) -> str:
    return str(node)


def _meta(path: Path | None) -> dict[str, Any]:
    if path is not None:
        return {"release": "folder"}
    try:
        return {"release": "package", "catchbench_version": metadata.version("catchbench")}
    except metadata.PackageNotFoundError:
        return {"release": "package"}


def _child(root: Traversable, *parts: str) -> Traversable | None:
    node = root
    for part in parts:
        node = node / part
    return node if (node.is_file() or node.is_dir()) else None


def _json_files(folder: Traversable | None) -> list[Traversable]:
    if folder is None or not folder.is_dir():
        return []
    return sorted((f for f in folder.iterdir() if f.is_file() and f.name.endswith(".json")), key=lambda f: f.name)


# --------------------------------------------------------------------------- PRE configs

def _pre_corpus_row() -> dict[str, Any]:
    return {"corpus": PRE_CORPUS, "title": PRE_TITLE, "kind": "real",
            "label_process": PRE_LABEL_PROCESS, "description": PRE_DESCRIPTION}


def _pre_source(raw: str) -> str:
    """Every ``synth_*`` source counts as "synthetic" (the board pools them as one column)."""
    return "synthetic" if raw.startswith("synth_") or raw == "synthetic" else raw


def _read_pre(root: Traversable, problems: list[InputError]) -> tuple[list[dict], list[dict], dict[str, list[str]]]:
    configs: list[dict] = []
    capabilities: list[dict] = []
    declared: dict[str, list[str]] = {}  # instance_id -> declared capability names
    for node in _json_files(_child(root, "pre")):
        records = load_json(node, problems, "a JSON list of PRE configuration records")
        if records is None:
            continue
        if not isinstance(records, list):
            problems.append(InputError(_where(node), None, "must hold a list of PRE configuration records."))
            continue
        for i, record in enumerate(records):
            parsed = _pre_record(record, node, i, problems)
            if parsed is None:
                continue
            config, caps = parsed
            instance_id = config["config_id"].split(":", 1)[1]
            if instance_id in declared:
                problems.append(InputError(_where(node), "instance_id",
                                           f"record {i}: instance_id '{instance_id}' appears twice in the release."))
                continue
            declared[instance_id] = [c["name"] for c in caps]
            configs.append(config)
            capabilities.extend(caps)
    return configs, capabilities, declared


def _pre_record(record: Any, node: Traversable, i: int, problems: list[InputError]) -> tuple[dict, list[dict]] | None:
    file = _where(node)
    if not isinstance(record, dict):
        problems.append(InputError(file, None, f"record {i} is not an object."))
        return None
    before = len(problems)
    instance_id = record.get("instance_id")
    if not isinstance(instance_id, str) or not instance_id:
        problems.append(InputError(file, "instance_id", f"record {i} has no instance_id string."))
    source = record.get("source")
    if not isinstance(source, str) or not source:
        problems.append(InputError(file, "source", f"record {i} has no source string."))
    caps = record.get("declared_capabilities")
    if not isinstance(caps, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in caps):
        problems.append(InputError(file, "declared_capabilities",
                                   f"record {i} must list capabilities, each an object with a name."))
    else:
        for k, cap in enumerate(caps):
            for key in ("type", "permission_level"):  # text columns: a number or object is an error
                if cap.get(key) is not None and not isinstance(cap[key], str):
                    problems.append(InputError(file, f"declared_capabilities[{k}].{key}",
                                               f"record {i}: must be a string, found {show(cap[key])}."))
    labels = record.get("labels")
    if not isinstance(labels, dict) or not isinstance(labels.get("excess_set"), list):
        problems.append(InputError(file, "labels.excess_set", f"record {i} has no labels.excess_set list."))
    elif not all(isinstance(name, str) for name in labels["excess_set"]):
        problems.append(InputError(file, "labels.excess_set", f"record {i}: must list capability names (strings)."))
    elif not isinstance(labels.get("label_source"), str):
        problems.append(InputError(file, "labels.label_source", f"record {i} has no labels.label_source string."))
    tokens = record.get("spec_tokens", [])
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        problems.append(InputError(file, "spec_tokens", f"record {i}: spec_tokens must be a list of strings."))
    if len(problems) > before:
        return None

    config_id = f"{PRE_CORPUS}:{instance_id}"
    excess = set(labels["excess_set"])
    config = {
        "config_id": config_id,
        "corpus": PRE_CORPUS,
        "config_source": _pre_source(source),
        "label_process": labels["label_source"],
        "n_capabilities": len(caps),
        "spec_tokens": list(tokens),
        "extra": json_text(_pre_extra(record, node), sort_keys=True),
    }
    rows = [
        {"config_id": config_id, "corpus": PRE_CORPUS, "cap_idx": k, "name": c["name"],
         "type": c.get("type"), "permission_level": c.get("permission_level"), "excess": c["name"] in excess}
        for k, c in enumerate(caps)
    ]
    return config, rows


def _pre_extra(record: dict, node: Traversable) -> dict[str, Any]:
    labels = record["labels"]
    return {
        "file": f"pre/{node.name}",
        "raw_source": record["source"],
        "provenance": record.get("provenance"),
        "labels": {k: labels[k] for k in ("judges", "merge_rule", "attack_type") if k in labels},
        "spec_token_overrides": record.get("spec_token_overrides") or {},
        "minimal_reference": record.get("minimal_reference"),
    }


# --------------------------------------------------------------------------- PRE judge

def _read_pre_judges(root: Traversable, declared: dict[str, list[str]], problems: list[InputError],
                     notes: list[str]) -> tuple[list[dict], list[dict]]:
    """The held-out PRE judge names the capabilities a config needs; it flags the rest."""
    sets: list[dict] = []
    rows: list[dict] = []
    for node in _json_files(_child(root, "pre", "llm_judge_method")):
        needed_by_config = load_json(node, problems, "a JSON object mapping instance ids to capability names")
        if needed_by_config is None:
            continue
        if not isinstance(needed_by_config, dict) or not all(
                isinstance(v, list) and all(isinstance(name, str) for name in v) for v in needed_by_config.values()):
            problems.append(InputError(_where(node), None,
                                       "must map each instance_id to the list of capability names it needs."))
            continue
        model = node.name[: -len(".json")]
        set_id = f"{PRE_CORPUS}:judge:llm_judge_needed:{model}"
        unknown = sorted(set(needed_by_config) - set(declared))
        if unknown:
            notes.append(f"{len(unknown)} config(s) in pre/llm_judge_method/{node.name} are not PRE records "
                         f"and were skipped (e.g. {unknown[0]}).")
        scored = [cid for cid in declared if cid in needed_by_config]
        for instance_id in scored:
            needed = set(needed_by_config[instance_id])
            for name in declared[instance_id]:
                flagged = 0 if name in needed else 1
                rows.append({"set_id": set_id, "corpus": PRE_CORPUS, "config_id": f"{PRE_CORPUS}:{instance_id}",
                             "capability": name, "score": float(flagged), "pred_label": flagged, "split": "all"})
        sets.append({
            "set_id": set_id, "corpus": PRE_CORPUS, "method": "llm_judge_needed", "family": "llm",
            "supervision": "zero-shot", "granularity": "config", "model": model, "origin": "release",
            "source_file": f"pre/llm_judge_method/{node.name}",
            "params": json.dumps({"entrant": f"llm_judge_needed({model})", "n_scored": len(scored),
                                  "n_configs": len(declared),
                                  "rule": "flags every declared capability the judge does not list as needed"},
                                 sort_keys=True),
        })
    return sets, rows


# --------------------------------------------------------------------------- Who&When judges

def _read_whowhen_judges(root: Traversable, problems: list[InputError]) -> tuple[list[dict], list[dict]]:
    sets: list[dict] = []
    rankings: list[dict] = []
    for folder, board in (("llm_judge", "board"), ("llm_judge_addendum", "addendum")):
        directory = _child(root, folder)
        files = [f for f in _json_files(directory)
                 if _JUDGE_FILE.match(f.name) and not f.name.endswith(_SIDECAR_SUFFIX)]
        for node in files:
            sidecar = _sidecar(directory, node, problems) if board == "addendum" else None
            parsed = _judge_cache(node, f"{folder}/{node.name}", board, sidecar, problems)
            if parsed is not None:
                sets.append(parsed[0])
                rankings.extend(parsed[1])
    return sets, rankings


def _sidecar(directory: Traversable, node: Traversable, problems: list[InputError]) -> dict | None:
    sidecar = directory / (node.name[: -len(".json")] + _SIDECAR_SUFFIX)
    if not sidecar.is_file():
        return None
    data = load_json(sidecar, problems, "a JSON object of provenance")
    if data is not None and not isinstance(data, dict):
        problems.append(InputError(_where(sidecar), None, f"must be a JSON object of provenance, found {type(data).__name__}."))
        return None
    return data


def _judge_cache(node: Traversable, rel: str, board: str, sidecar: dict | None,
                 problems: list[InputError]) -> tuple[dict, list[dict]] | None:
    data = load_json(node, problems, "a judge cache (a JSON object with predictions)")
    if data is None:
        return None
    file = _where(node)
    if not isinstance(data, dict) or not isinstance(data.get("predictions"), dict):
        problems.append(InputError(file, "predictions", "must map each run key to {top, ranking}."))
        return None
    provenance = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    name = _JUDGE_FILE.match(node.name)
    protocol = str(provenance.get("method") or name["protocol"])
    model = str(provenance.get("model") or name["model"])
    tag = "judge" if board == "board" else "judge-addendum"
    set_id = f"{WHOWHEN_CORPUS}:{tag}:{protocol}:{model}"

    rows = []
    before = len(problems)
    for run_key, pred in data["predictions"].items():
        row = _ranking_row(set_id, run_key, pred, file, problems)
        if row is not None:
            rows.append(row)
    if len(problems) > before:
        return None
    params = {
        "board": board,
        "entrant": f"llm-judge {protocol.replace('_', '-')} ({model})",
        "prompt_sha": provenance.get("prompt_sha"),
        "provenance": provenance,
    }
    if sidecar is not None:
        params["sidecar"] = _sidecar_summary(sidecar)
    prediction_set = {
        "set_id": set_id, "corpus": WHOWHEN_CORPUS, "method": "llm_judge", "family": "llm",
        "supervision": "zero-shot", "granularity": "step", "protocol": protocol, "model": model,
        "origin": "release", "source_file": rel, "params": json.dumps(params, sort_keys=True),
    }
    return prediction_set, rows


def _ranking_row(set_id: str, run_key: str, pred: Any, file: str, problems: list[InputError]) -> dict | None:
    if not isinstance(pred, dict):
        problems.append(InputError(file, f"predictions.{run_key}", "must be an object with top and ranking."))
        return None
    top = pred.get("top")
    ranking = pred.get("ranking") or []
    if top is not None and not is_count(top):
        problems.append(InputError(file, f"predictions.{run_key}.top",
                                   f"must be a step index (a whole number >= 0) or null, not {show(top)}."))
        return None
    if not isinstance(ranking, list) or not all(is_count(r) for r in ranking):
        problems.append(InputError(file, f"predictions.{run_key}.ranking",
                                   "must be a list of step indices (whole numbers >= 0)."))
        return None
    # An abstention (top null, nothing ranked) is kept: the scoring rule ranks its steps earliest-first.
    return {"set_id": set_id, "corpus": WHOWHEN_CORPUS, "run_key": run_key, "top": top, "ranking": list(ranking)}


def _sidecar_summary(sidecar: dict) -> dict:
    """The sidecar minus its per-run prompt hashes (126 of them; their count is kept)."""
    summary = {k: v for k, v in sidecar.items() if k != "prompt_manifest"}
    manifest = sidecar.get("prompt_manifest")
    if isinstance(manifest, dict):
        per_run = manifest.get("per_run_sha256")
        summary["prompt_manifest"] = {k: v for k, v in manifest.items() if k != "per_run_sha256"}
        if isinstance(per_run, dict):
            summary["prompt_manifest"]["n_per_run_sha256"] = len(per_run)
    return summary


# --------------------------------------------------------------------------- golden board

def _read_golden(root: Traversable, problems: list[InputError], notes: list[str]) -> list[dict]:
    node = _child(root, "golden", "board.txt")
    if node is None or not node.is_file():
        return []
    try:
        text = node.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(InputError(_where(node), None, f"cannot be read ({exc})."))
        return []
    rows, parse_notes = parse_board(text)
    notes.extend(parse_notes)
    if not rows:
        problems.append(InputError(_where(node), None, "holds no '[PILLAR] task :: corpus' table with values."))
    return rows
