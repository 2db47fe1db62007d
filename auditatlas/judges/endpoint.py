"""Calls to any OpenAI-compatible Chat Completions endpoint, through the official ``openai``
client, politely: bounded connections, a per-call timeout, retries with exponential backoff
and full jitter on 429, 5xx, timeouts and dropped connections, honouring ``Retry-After``.

Why our own retry loop and not the client's ``max_retries``: the client's loop (openai 1.x-3.x
``_base_client``) does back off with jitter and honours ``Retry-After`` up to 60-120 s, but it
retries inside one awaited call, so the judge can neither count the retries (provenance keeps
them per call) nor stop between them when the run is cancelled or its budget spent. The client
is made with ``max_retries=0`` and this module retries instead, with the same rules.

JSON mode: the first call asks for ``response_format={"type": "json_object"}``. Many
OpenAI-compatible servers reject it (400 or 422 naming ``response_format``); the call is then
made again without it, and JSON mode stays off for the rest of the run (``json_mode`` in the
set's provenance says so). The reply contract (``contract``) is the same either way.

The API key is read from the environment variable the user names, handed to the client and
nowhere else: not to the cache, the provenance, a log line or an error message.
"""
from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

from ..errors import AtlasError
from .cache import Cached

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0  # a longer Retry-After ends the call's retries (counted as failed)
REFUSAL_WORDS = ("response_format", "json_object", "json mode", "json_schema", "response format")


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment: what provenance and messages show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AtlasError(f"--base-url '{public_url(url) or url[:80]}' is not an http(s) URL "
                         "(e.g. http://localhost:8000/v1).")
    return url


def api_key(env_name: str) -> str | None:
    """The key from ``$env_name``; None when unset (a local server usually needs none)."""
    value = os.environ.get(env_name)
    return value if value else None


@dataclass(frozen=True)
class Answer(Cached):
    """One call's outcome: a reply (``content``, maybe empty; what the cache keeps) or
    ``failure`` with its kind."""

    failure: str | None = None  # "refused" | "failed" (contract.REASONS), with ``detail``
    detail: str = ""


class Fatal(AtlasError):
    """An answer no retry or other prompt will change (a wrong key, an unknown model)."""


def retry_after(headers) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                continue
    return None


def backoff(attempt: int, rng: random.Random) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2^attempt)] (AWS's "exponential backoff and
    jitter": concurrent callers that failed together do not retry together)."""
    return rng.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** attempt))


class Endpoint:
    """An OpenAI-compatible endpoint, one model, shared by the run's concurrent calls."""

    def __init__(self, base_url: str, model: str, key: str | None, *, max_connections: int = 4,
                 timeout_s: float = 120.0, max_retries: int = 5, temperature: float | None = 0.0,
                 max_tokens: int | None = None, seed: int = 0) -> None:
        import openai

        self.model = model
        self.url = public_url(base_url)
        self.max_retries = max_retries
        self.parameters: dict[str, object] = {}
        if temperature is not None:
            self.parameters["temperature"] = temperature
        if max_tokens is not None:
            self.parameters["max_tokens"] = max_tokens
        self.json_mode = True
        self.json_refusal = ""
        self.rng = random.Random(seed)
        # The client's own pool allows far more connections than we open: ``slots`` bounds the
        # calls in flight, so at most ``max_connections`` connections are ever busy.
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=key or "no-key", max_retries=0,
                                         timeout=timeout_s)
        self.slots = asyncio.Semaphore(max_connections)

    async def close(self) -> None:
        await self.client.close()

    async def ask(self, messages: list[dict], stop=None) -> Answer:
        """One chat completion, retried as the module says; never raises for a bad call (the
        answer says it failed), except ``Fatal`` for 401/403/404 and ``asyncio.CancelledError``."""
        import openai

        retries = 0
        began = time.perf_counter()
        while True:
            json_mode = self.json_mode
            extra = {"response_format": {"type": "json_object"}} if json_mode else {}
            try:
                async with self.slots:
                    t0 = time.perf_counter()
                    response = await self.client.chat.completions.create(
                        model=self.model, messages=messages, **self.parameters, **extra)
                    latency = time.perf_counter() - t0
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if json_mode and _names_json_mode(exc):
                    self.json_mode = False
                    self.json_refusal = _message(exc)[:300]
                    continue  # not a retry: the same call without JSON mode
                return self._failed("refused", f"{exc.status_code}: {_message(exc)[:200]}", retries, began, json_mode)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise Fatal(f"{self.url} answered {exc.status_code} ({_message(exc)[:200]}); check the key the "
                            "environment variable named by --api-key-env holds.") from None
            except openai.NotFoundError as exc:
                raise Fatal(f"{self.url} answered 404 for model '{self.model}' ({_message(exc)[:200]}); check "
                            "--model and --base-url (an OpenAI-compatible server's URL usually ends in /v1).") from None
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in (408, 409, 429) and status < 500:
                    return self._failed("refused", f"{status}: {_message(exc)[:200]}", retries, began, json_mode)
                wait = retry_after(exc.response.headers if exc.response is not None else None)
                if wait is not None and wait > RETRY_AFTER_CAP_S:
                    return self._failed("failed", f"{status}, Retry-After {wait:.0f} s is past the "
                                        f"{RETRY_AFTER_CAP_S:.0f} s cap", retries, began, json_mode)
                if retries >= self.max_retries:
                    return self._failed("failed", f"{status} after {retries} retries", retries, began, json_mode)
                await asyncio.sleep(wait if wait is not None else backoff(retries, self.rng))
                retries += 1
                continue
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                if retries >= self.max_retries:
                    return self._failed("failed", f"{type(exc).__name__} after {retries} retries", retries, began,
                                        json_mode)
                await asyncio.sleep(backoff(retries, self.rng))
                retries += 1
                continue
            return self._answer(response, latency, retries, json_mode)

    def _answer(self, response, latency: float, retries: int, json_mode: bool) -> Answer:
        choice = response.choices[0] if getattr(response, "choices", None) else None
        content = getattr(getattr(choice, "message", None), "content", None) if choice else None
        finish = getattr(choice, "finish_reason", None) if choice else None
        usage = getattr(response, "usage", None)
        tin = getattr(usage, "prompt_tokens", None) if usage else None
        tout = getattr(usage, "completion_tokens", None) if usage else None
        if finish == "content_filter":
            return Answer(content, finish, tin, tout, latency, retries, json_mode, "refused", "content filter")
        return Answer(content, finish, tin, tout, latency, retries, json_mode)

    def _failed(self, kind: str, detail: str, retries: int, began: float, json_mode: bool) -> Answer:
        return Answer(None, None, None, None, time.perf_counter() - began, retries, json_mode, kind, detail)


def _message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
    return str(getattr(exc, "message", "") or exc)


def _names_json_mode(exc) -> bool:
    text = (_message(exc) + " " + str(getattr(exc, "body", ""))).lower()
    return any(word in text for word in REFUSAL_WORDS)
