"""A received trace in the Explorer, in a real browser.

The real OpenTelemetry SDK with the real OTLP/HTTP exporter sends an instrumented agent's
spans to the live receiver (auditatlas/ingest/receiver, the server `auditatlas receive` runs),
which writes them into the store a Streamlit server has been serving since before the spans
existed. The Explorer's run list, open meanwhile, offers the received run; its deep link, opened
in headless Chromium, shows its graph (one row per agent) and its steps: no restart in between.

Budget: one Streamlit server on a store of one small corpus, one page (the worker's shared
Chromium).
"""
from __future__ import annotations

import re

import pytest

from auditatlas.ingest import ingest
from browser_support import exceptions_on, graph_frame, new_page, streamlit_server, wait_idle
from otlp_fixtures import openinference_trace, write_json
from receive_support import running

pytestmark = pytest.mark.browser


def _instrumented_agent(endpoint: str) -> str:
    """A planner agent whose LLM call runs a search tool, then hands off to a writer agent, traced
    with the SDK's batch processor and OTLP/HTTP protobuf exporter; returns the trace id (hex)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind

    provider = TracerProvider(resource=Resource.create({"service.name": "my-agents"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("my-agents", "1.0")
    with tracer.start_as_current_span("planner", attributes={
            "openinference.span.kind": "AGENT", "agent.name": "planner", "input.value": "plan a trip"}) as root:
        with tracer.start_as_current_span("ChatCompletion", kind=SpanKind.CLIENT, attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "output.value": "search first",
                "llm.token_count.prompt": 120, "llm.token_count.completion": 30}):
            with tracer.start_as_current_span("search", attributes={
                    "openinference.span.kind": "TOOL", "tool.name": "web_search", "output.value": "3 results"}):
                pass
        with tracer.start_as_current_span("writer", attributes={"openinference.span.kind": "AGENT",
                                                                "agent.name": "writer"}):
            with tracer.start_as_current_span("ChatCompletion", kind=SpanKind.CLIENT, attributes={
                    "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "output.value": "a draft"}):
                pass
        trace_id = f"{root.get_span_context().trace_id:032x}"
    provider.shutdown()  # the batch processor exports what it holds
    return trace_id


def test_a_received_trace_opens_in_the_explorer_of_a_running_app(tmp_path, browser):
    store = tmp_path / "store"
    # The app starts on a store holding one file import; the received corpus does not exist yet.
    ingest("otlp", write_json(tmp_path / "t.json", openinference_trace()), store, corpus="files")
    outside: list[str] = []
    with streamlit_server(store) as url, running(store, corpus="live") as live:
        # The run list, open while the trace arrives, offers it without a reload of the page.
        page = new_page(browser, outside)
        page.goto(f"{url}/explorer")
        wait_idle(page, "1 runs; page 1 of 1")
        trace_id = _instrumented_agent(live.url)
        live.wait_writes(1)
        written = live.lines[-1]  # "wrote 1 traces (5 spans) to corpus live" (the plural is the receiver's)
        assert written.startswith("wrote 1 trace") and written.endswith("(5 spans) to corpus live")
        page.get_by_text("1 new run received since this list was drawn.").wait_for(timeout=60_000)
        assert "1 runs; page 1 of 1" in page.inner_text("body")  # the list itself waits for the reader
        page.get_by_role("button", name="Show them").click()
        wait_idle(page, "2 runs; page 1 of 1")
        assert page.get_by_text("new run received", exact=False).count() == 0
        page.goto(f"{url}/explorer?corpus=live&run=live:{trace_id}&step=2&lanes=agent")
        wait_idle(page, "Step detail")
        # The run's facts line may be drawn a moment after the step detail on a busy machine.
        page.get_by_text("backbone gpt-4o", exact=False).first.wait_for(timeout=60_000)
        assert exceptions_on(page) == []
        body = page.inner_text("body").replace("\u2060", "")  # components.safe.md's word joiner after ':'
        assert f"live:{trace_id}" in body and "backbone gpt-4o" in body and "5 steps" in body, body[:3000]
        assert "Step 2 · TOOL:web_search · agent planner" in body
        assert re.search(r"Run planner · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n", body), body[:3000]  # its root span, its start
        frame = graph_frame(page)
        drawn = frame.evaluate("""() => {
            const net = window.traceNetwork, pos = net.getPositions();
            const nodes = net.body.data.nodes.get();
            return {labels: nodes.map(n => n.label.split("\\n")[0]),
                    rows: [...new Set(Object.values(pos).map(p => Math.round(p.y)))].length,
                    edges: net.body.data.edges.get().map(e => e.title).sort(),
                    hint: document.body.innerText};
        }""")
    # Steps in start order: planner, its LLM call, the tool that call made, writer, writer's LLM call.
    assert drawn["labels"] == ["0 AGENT", "1 LLM", "2 TOOL:web_search", "3 AGENT", "4 LLM"]  # whole, not cut
    assert drawn["rows"] == 2  # planner's row and writer's
    assert drawn["edges"] == ["child (observed)", "child (observed)", "handoff (observed)", "tool_call (observed)"]
    assert "One row per agent" in drawn["hint"]
    assert not outside
