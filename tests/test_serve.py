"""The server's warm-up (components/serve.py): each step is guarded so that the server starts
whatever it meets, which also means a broken step only logs. These run the steps themselves
and hold them to saying nothing on a sound store."""
from __future__ import annotations

import logging

from components import serve
from stores import shared_store


def test_the_warm_up_runs_every_step_without_a_warning(monkeypatch, caplog):
    from streamlit import delta_generator
    from streamlit.runtime import Runtime

    monkeypatch.setenv("AUDITATLAS_STORE", str(shared_store("app")))
    serve.import_pages_modules()  # as the server does first, before its runtime exists
    monkeypatch.setattr(Runtime, "exists", staticmethod(lambda: True))  # as once the server runs
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    with caplog.at_level(logging.WARNING, logger="auditatlas.serve"):
        serve.open_store()
    assert [r.getMessage() for r in caplog.records if r.name == "auditatlas.serve"] == []
    # Streamlit's once-per-process check has been made: the first visitor's first element skips it.
    assert delta_generator._use_warning_has_been_displayed is True


def test_the_warm_up_checks_the_store_so_the_first_page_reads_no_footer(monkeypatch):
    from auditatlas import store_health
    from components import cached

    monkeypatch.setenv("AUDITATLAS_STORE", str(shared_store("app")))
    serve.import_pages_modules()
    cached._store_problems.cache_clear()  # as in a new server
    serve._open_store()
    read: list = []
    monkeypatch.setattr(store_health, "_unreadable_part", lambda parts: read.append(parts))
    assert cached.store_problems() == []
    assert read == []
