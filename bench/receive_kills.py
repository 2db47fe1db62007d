"""`auditatlas receive` killed with SIGKILL N times under load: acknowledged spans lost, spans stored twice.

    .venv/bin/python bench/receive_kills.py [--kills 20] [--idle 0.2] [--traces 1500] [--seed 44]

The loop of ``tests/test_receive_durability.py`` (its receiver, senders and store reading are
imported from there), longer: the receiver in its own process on a free localhost port, two
senders (the OpenTelemetry SDK's OTLP/HTTP exporter, and plain posts of the SDK's protobuf
encoding, gzip or not), a SIGKILL after a random 0.3-1.2 s of each life (so some land in the
middle of a store write, some in a journal commit), a restart on the same port and store. At
the end a SIGTERM writes what is held, and the store is read span by span.

Figures: kills, kills that came after at least one write of that life, kills in the middle of a
store write (a staging folder left behind, which the next write removes), spans answered 200,
acknowledged spans missing from the store, spans stored more than once, journal records left,
and the seconds each restart took to answer (its replay included). Not a test: nothing is
asserted. Writes ``bench/out/receive_kills.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from auditatlas.store import STAGING_PREFIX  # noqa: E402
from test_receive_durability import Receiver, Sender, free_port, journal_records, sdk_batches, stored  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--idle", type=float, default=0.2)
    parser.add_argument("--traces", type=int, default=1500, help="traces per sender (5 spans each)")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "receive_kills.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-kills-") as tmp:
        store = Path(tmp) / "store"
        receiver = Receiver(store, free_port(), "--idle", str(args.idle))
        receiver.start()
        senders = [Sender(receiver.url, sdk_batches(args.traces, seed=1), "exporter"),
                   Sender(receiver.url, sdk_batches(args.traces, seed=2), "post")]
        for s in senders:
            s.start()
        after_write, restarts, replayed, mid_write = 0, [], 0, 0
        t0 = time.perf_counter()
        try:
            for _ in range(args.kills):
                time.sleep(rng.uniform(0.3, 1.2))
                after_write += any(ln.startswith("wrote ") for ln in receiver.lines)
                receiver.kill()
                mid_write += any(p.name.startswith(STAGING_PREFIX) for p in store.iterdir())
                started = time.perf_counter()
                receiver.start()
                restarts.append(time.perf_counter() - started)
                replayed += sum(ln.startswith("replayed ") for ln in receiver.lines)
            time.sleep(0.5)
        finally:
            for s in senders:
                s.halt.set()
            for s in senders:
                s.join(60)
        receiver.stop()
        seconds = time.perf_counter() - t0
        acked = {i for s in senders for i in s.acked}
        held = stored(store)
        result = {
            "kills": args.kills, "kills_after_a_write_of_that_life": after_write,
            "kills_in_the_middle_of_a_store_write": mid_write,
            "restarts_that_replayed": replayed, "seconds": round(seconds, 1),
            "restart_to_answer_s": {"median": round(sorted(restarts)[len(restarts) // 2], 2),
                                    "max": round(max(restarts), 2)},
            "spans_sent": sum(len(s.sent) for s in senders), "spans_acknowledged": len(acked),
            "acknowledged_lost": len(acked - set(held)), "stored_twice": len(held) - len(set(held)),
            "spans_in_store": len(held), "journal_records_left": journal_records(store),
            "answers": [s.answers for s in senders], "idle_s": args.idle,
            "load_average_1_5_15": {"before": [round(x, 2) for x in load_before],
                                    "after": [round(x, 2) for x in os.getloadavg()]},
            "cores": os.cpu_count(),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
