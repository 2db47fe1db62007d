"""The local Dask cluster: its workers never re-run the parent's main script, and take Arrow
buffers from malloc."""
from __future__ import annotations

import sys
import types

from auditatlas.cluster import get_client


def test_workers_do_not_run_the_main_script(tmp_path, monkeypatch):
    # A main script that leaves a mark when it runs, as app.py renders the app under AppTest.
    mark = tmp_path / "ran"
    script = tmp_path / "main_script.py"
    script.write_text(f"open({str(mark)!r}, 'a').write('ran\\n')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", main)
    client = get_client(n_workers=1)
    try:
        backends = client.run(lambda: __import__("pyarrow").default_memory_pool().backend_name)
    finally:
        client.close()
    assert not mark.exists()
    assert sys.modules["__main__"] is main  # restored once the workers are up
    assert set(backends.values()) == {"system"}
