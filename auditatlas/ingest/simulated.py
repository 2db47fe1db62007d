"""The simulated corpus as a streaming ingest plan.

Each chunk is a range of room indices: a worker simulates its rooms (``auditatlas.simulator``,
deterministic per room index whatever the chunking) and converts them with the MAADBench
importer's own conversion (``maadbench.convert_documents``), the very code a release file goes
through, minus the JSON round trip through the disk. Room indices do not follow run-id order
(a run folder takes every n-th room), so parts are bucketed by run folder and each folder's
parts are merged at commit: memory holds one folder, never the corpus.
"""
from __future__ import annotations

from functools import partial

from .. import simulator
from ..simulator.corpus import FOLDER_INDEX, folder_name
from . import maadbench
from .stream import Chunk, Plan

CHUNK_ROOMS = 2000
# At most this many chunks: every chunk's part has a row group per run folder (104), and the
# commit's merge holds the footers of all parts (about 400 bytes a column chunk). With 2,000-room
# chunks a million rooms made 500 parts and over 500 MB of footers; 128 parts of ~7,800 rooms
# cost a worker about 170 MB more while converting.
MAX_CHUNKS = 128


def plan(rooms: int, seed: int, *, chunk_rooms: int | None = None) -> Plan:
    """Rooms ``0..rooms-1`` of seed ``seed`` as source ``demo`` (corpus ``maadbench-sim``)."""
    if chunk_rooms is None:
        chunk_rooms = max(CHUNK_ROOMS, -(-rooms // MAX_CHUNKS))
    bounds = [(start, min(rooms, start + chunk_rooms)) for start in range(0, rooms, chunk_rooms)]
    buckets = {folder_name(seed, key): f"f{index:04d}" for key, index in FOLDER_INDEX.items()}
    return Plan(
        source=simulator.SOURCE,
        chunks=[(rooms, seed, start, stop) for start, stop in bounds],
        convert=convert_rooms,
        head={"corpora": [maadbench.corpus_row(simulator.CORPUS, simulator.KIND)]},
        meta={"format": "maadbench", "origin": "simulated", "rooms": rooms, "seed": seed,
              "corpus": simulator.CORPUS, "kind": simulator.KIND},
        bucket_of=partial(_bucket, buckets, len(simulator.CORPUS) + 1),
        units="rooms",
        sizes=[stop - start for start, stop in bounds],
        notes=maadbench.summary_notes,
    )


def convert_rooms(unit: tuple[int, int, int, int]) -> Chunk:
    rooms, seed, start, stop = unit
    return maadbench.convert_documents(simulator.iter_rooms(rooms, seed, start, stop), simulator.CORPUS)


def _bucket(buckets: dict[str, str], skip: int, run_id: str) -> str:
    """The sort bucket of a run: its run folder (folder names sort by their start time)."""
    return buckets[run_id[skip:].split("/", 1)[0]]


def build(store, rooms: int, seed: int, *, scheduler: str | None = None, workers: int | None = None,
          progress=None, notify=None, check=None) -> dict:
    """Simulate and ingest ``rooms`` rooms as source ``demo``; returns counts for the summary.

    ``check(staging)`` runs on the staged source before it lands (``SourceWriter.commit``)."""
    from . import after_write_notes
    from .stream import run_plan

    simulated = plan(rooms, seed)
    simulated.check = check
    outcome = run_plan(simulated, store, scheduler=scheduler, workers=workers, progress=progress, notify=notify)
    return {"rooms": rooms, "runs": outcome.counters.get("runs", 0), "steps": outcome.counters.get("steps", 0),
            "rows": outcome.entry["rows"], "notes": outcome.notes + after_write_notes(store, simulator.SOURCE),
            "seconds": round(outcome.seconds, 2)}
