"""A scripted OpenAI-compatible Chat Completions server for the judge tests and the benchmark.

A real HTTP server (Starlette on uvicorn, localhost only) in a process of its own, so a test can
kill it. The request's ``model`` chooses the behaviour, so one server plays every script:

``oracle``      answers the truth (read from the truths file, keyed by the task's text)
``random``      a uniform random answer, seeded by the prompt
``malformed``   prose instead of JSON ("The mistake is at step 1.")
``empty``       no content, finish_reason ``length`` (a reasoning model out of tokens)
``nojson``      400 "response_format is not supported" whenever response_format is sent, else oracle
``ratelimit``   each prompt first gets 429 with Retry-After: 1, then the oracle's answer
``flaky``       each prompt first gets two 500s, then the oracle's answer
``slow-MS``     the oracle's answer after MS milliseconds (``slow-200``)
``fixed-MS``    a constant all-at-once answer ({"agent": "a", "step": 0}) after MS milliseconds
                (the benchmark: no parsing of the prompt beyond the JSON body)

It parses the prompt the shipped templates write (``auditatlas/judges/templates``): the task
under ``## Task``, and which protocol asks by the lines each template holds. ``GET /stats``
returns the calls per model and every Authorization header value it saw (the key test).

    python tests/judge_server.py TRUTHS.json   # prints "port N" once listening
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import socket
import sys
from collections import Counter

TASK = re.compile(r"## Task\n(?P<task>.*?)\n\n(?:## Correct answer|## Log)", re.DOTALL)
N_ALL = re.compile(r"The log holds (\d+) steps")
AGENTS = re.compile(r"The agents of this log are:\n(.*)\.\n")
REVIEW = re.compile(r"Step under review: (\d+)")
N_PREFIX = re.compile(r"Steps 0 to \d+ of (\d+)\.")
HALVES = re.compile(r"Upper half: steps (\d+) to (\d+)\.\nLower half: steps (\d+) to (\d+)\.")
SCORE = re.compile(r"Score every step from (\d+) to (\d+)")


def answer(kind: str, prompt: str, truths: dict) -> dict:
    """The reply object the oracle (kind 'oracle') or the random answerer gives."""
    task = TASK.search(prompt)
    truth = truths.get(task.group("task")) if task else None
    rng = random.Random(hashlib.sha256(prompt.encode()).hexdigest())
    if (m := REVIEW.search(prompt)):
        k = int(m.group(1))
        if kind == "oracle":
            return {"mistake": truth is not None and k == truth["step"], "reason": "scripted"}
        n = int(N_PREFIX.search(prompt).group(1))
        return {"mistake": rng.random() < 1 / (n - k), "reason": "random"}
    if (m := HALVES.search(prompt)):
        us, ue, ls, le = map(int, m.groups())
        if kind == "oracle":
            return {"half": "upper" if truth is not None and truth["step"] <= ue else "lower"}
        return {"half": "upper" if rng.random() < (ue - us + 1) / (le - us + 1) else "lower"}
    if (m := SCORE.search(prompt)):
        lo, hi = int(m.group(1)), int(m.group(2))
        if kind == "oracle":
            return {"scores": [{"step": s, "p": 0.9 if truth and s == truth["step"] else 0.1} for s in range(lo, hi + 1)]}
        return {"scores": [{"step": s, "p": round(rng.random(), 4)} for s in range(lo, hi + 1)]}
    if kind == "oracle":
        return {"agent": truth["agent"], "step": truth["step"], "reason": "scripted"} if truth else {"step": 0}
    n = int(N_ALL.search(prompt).group(1))
    agents = AGENTS.search(prompt).group(1).split(", ")
    return {"agent": rng.choice(agents), "step": rng.randrange(n), "reason": "random"}


def app(truths: dict):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    calls: Counter = Counter()
    seen: Counter = Counter()  # (model, prompt hash) -> requests, for the scripts that fail first
    auth: set[str] = set()

    def reply(model: str, content: str | None, finish: str = "stop") -> JSONResponse:
        return JSONResponse({
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        })

    def error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status,
                            headers=headers)

    async def completions(request: Request):
        body = await request.json()
        model = str(body.get("model"))
        calls[model] += 1
        auth.add(request.headers.get("authorization", ""))
        if model.startswith("fixed-"):
            await asyncio.sleep(int(model.split("-")[1]) / 1000)
            return reply(model, '{"agent": "a", "step": 0}')
        prompt = body["messages"][-1]["content"]
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        seen[(model, digest)] += 1
        nth = seen[(model, digest)]
        if model == "malformed":
            return reply(model, "The mistake is at step 1.")
        if model == "empty":
            return reply(model, "", "length")
        if model == "nojson" and "response_format" in body:
            return error(400, "response_format is not supported by this server")
        if model == "ratelimit" and nth == 1:
            return error(429, "rate limited", {"Retry-After": "1"})
        if model == "flaky" and nth <= 2:
            return error(500, "scripted failure")
        if model.startswith("slow-"):
            await asyncio.sleep(int(model.split("-")[1]) / 1000)
        kind = "random" if model == "random" else "oracle"
        return reply(model, json.dumps(answer(kind, prompt, truths)))

    async def stats(request: Request):
        return JSONResponse({"calls": dict(calls), "authorization": sorted(auth)})

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/stats", stats)])


def main() -> None:
    import uvicorn

    truths = json.loads(open(sys.argv[1]).read()) if len(sys.argv) > 1 else {}
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"port {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app(truths), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
