"""The live OTLP receiver: ``auditatlas receive --corpus NAME [--port 4318] [--host 127.0.0.1]``.

An adapter fed by HTTP, in its own process: OTLP/HTTP ``POST /v1/traces`` (protobuf or JSON,
gzip or deflate) on Starlette and uvicorn, so ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=
http://localhost:4318/v1/traces`` sends any instrumented agent's spans into corpus NAME.

- Bodies are read by the file ingest's own reader (:func:`..otlp_spans.decode_body`) and traces
  mapped by its own mapping (:func:`..otlp.map_spans`): the same spans sent or read from a file
  give the same rows (runs are traces; ``--group session`` is a file ingest's option only).
- A request is answered only once its body is committed (fsync) to the receiver's journal
  (:mod:`.journal`, ``STORE/receiver/<corpus>.journal``), which the next start replays: a 200
  survives ``kill -9``, and a replay stores no span twice.
- Spans are held in bounded memory (:mod:`.held`, ``--max-spans``; bodies being decoded,
  ``--max-decoding-mb``); a trace is written once it has been idle ``--idle`` seconds,
  everything on shutdown (SIGTERM, Ctrl-C), and early under memory pressure; past a bound a
  request is answered 503 with Retry-After, and one that alone exceeds a cap 413 (:mod:`.bodies`).
- Each write adds the traces to the corpus's store source atomically (:mod:`.writes`), so the
  running app shows them at its next query; then the journal's records it covers are deleted.

It listens on localhost unless ``--host`` says otherwise (spans carry prompts and outputs), and
prints one line per write and per rejected request.

The receiver itself is imported from :mod:`.service`: this module stays light, so the command
line's parser reads the defaults here and :class:`Settings` without loading the service (the OTLP
reading and the store's writer, with pyarrow).
"""
from __future__ import annotations

import signal
import socket
import threading
from typing import TYPE_CHECKING

from ...errors import AtlasError
from .receiver_settings import Settings  # noqa: F401 - the package's API

if TYPE_CHECKING:  # annotations only: the command line's parser imports this package for its defaults
    from .service import Receiver

DEFAULT_PORT = 4318  # the OTLP/HTTP port
DEFAULT_HOST = "127.0.0.1"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free one), or one sentence saying why there is none."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise AtlasError(f"--host '{host}' is not an address this machine has ({exc.strerror}).") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise AtlasError(f"cannot listen on {host} port {port} ({exc.strerror or exc}); choose another --port "
                         "or stop what holds it.") from None
    sock.setblocking(False)
    return sock


def server(receiver: Receiver, **config):
    """A uvicorn server of the receiver's app (run it with ``.run(sockets=[...])``)."""
    import uvicorn

    from .app import make_app

    settings = {"log_level": "warning", "access_log": False, "lifespan": "on", "timeout_graceful_shutdown": 5,
                **config}
    return uvicorn.Server(uvicorn.Config(make_app(receiver), **settings))


def run(receiver: Receiver, sock: socket.socket) -> None:
    """Serve until SIGTERM or Ctrl-C; held spans are written before it returns.

    uvicorn re-raises the signal that stopped it once it has shut down (so a default handler
    would end the process after all); here the write on shutdown is the point, and the command
    then exits 0, so the handlers it re-raises to do nothing.
    """
    quiet = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)} if quiet else {}
    try:
        server(receiver).run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
