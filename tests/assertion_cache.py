"""Write pytest's cache of rewritten test modules before the suite starts (``make test``).

pytest rewrites each test module's asserts (for its failure messages) on import and caches the
result beside the module; every xdist worker imports every test module at collection, all at
the same moment, so on a fresh clone each of them rewrote all of them before any cache existed
(most of a worker's collection). Written once here, each worker reads it (bench/README.md, the
test suite).

pytest's own functions do the rewriting and name the cached files, so the cache is the one
pytest would write. They are pytest's internals: if a pytest release changes them, this says so
and exits 0, and the workers rewrite the modules themselves, as before.
"""
from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def main() -> None:
    try:
        from _pytest.assertion import rewrite

        class _Quiet:  # the AssertionState pytest passes: only its trace is read
            @staticmethod
            def trace(*_args) -> None:
                return None

        for module in [*sorted(TESTS.glob("test_*.py")), TESTS / "conftest.py"]:
            source_stat, code = rewrite._rewrite_test(module, None)
            cache = rewrite.get_cache_dir(module)
            cache.mkdir(exist_ok=True)
            rewrite._write_pyc(_Quiet, code, source_stat, cache / (module.name[:-3] + rewrite.PYC_TAIL))
    except Exception as exc:  # noqa: BLE001 - an optimisation: the suite runs the same without it
        print(f"tests/assertion_cache.py: no cache written ({type(exc).__name__}: {exc}); pytest rewrites the "
              "test modules itself.", file=sys.stderr)


if __name__ == "__main__":
    main()
