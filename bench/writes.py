"""The cost of one small write (``store.write_source`` of a 10-run source, replaced each time),
the invariant checks inside it, and a new DuckDB database beside them, in one process. Not a
test: nothing is asserted.

    .venv/bin/python bench/writes.py [--writes 40]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from auditatlas import store, validate  # noqa: E402
from auditatlas.duck import connect  # noqa: E402


def _tables() -> dict:
    runs = [{"run_id": f"w:{i}", "corpus": "w", "backbone": "A", "outcome": "failure", "n_steps": 2} for i in range(10)]
    steps = [{"run_id": f"w:{i}", "corpus": "w", "step_idx": j, "label": 0} for i in range(10) for j in range(2)]
    return {"runs": runs, "steps": steps}


def _per_call_ms(call, n: int) -> dict:
    call()  # warm
    cpu0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        call()
    return {"cpu_ms": round((time.process_time() - cpu0) / n * 1000, 1),
            "wall_ms": round((time.perf_counter() - t0) / n * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "writes.json")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-writes-")) / "store"
    tables = _tables()
    out = {"write_source": _per_call_ms(lambda: store.write_source(root, "w", tables), args.writes)}
    folder = root / store.read_manifest(root)["sources"]["w"]["dir"]
    out["check_staged"] = _per_call_ms(lambda: validate.check_staged(folder, "w"), args.writes)

    def own_database() -> None:
        old = validate.KEPT_MAX_BYTES
        validate.KEPT_MAX_BYTES = -1  # every source "large": a database of its own, as before
        try:
            validate.check_staged(folder, "w")
        finally:
            validate.KEPT_MAX_BYTES = old

    out["check_staged_own_database"] = _per_call_ms(own_database, args.writes)
    out["new_duckdb_database"] = _per_call_ms(lambda: connect().close(), args.writes)
    for name, figures in out.items():
        print(f"{name:28s} {figures['cpu_ms']:6.1f} ms CPU {figures['wall_ms']:6.1f} ms wall")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
