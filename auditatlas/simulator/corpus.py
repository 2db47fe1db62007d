"""The corpus: which room runs exist, where their files go, and the verdict streams they share.

Every room index ``r`` maps, by arithmetic alone, to its run folder, its room number in that
folder and its start time, so any range of rooms can be produced on its own (``iter_rooms``).
The only state shared between rooms is the stratified verdict streams, and they restart at
every block of ``BLOCK_ROOMS`` rooms: a range that starts inside a block replays the block's
earlier rooms (and discards them) to reach the same point in the streams.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from ..progress import Progress
from .model import BACKBONES, DIFFICULTIES, SHORTS, TOOL_MODES, Draw, calibration, play_room
from .rooms import DOMAINS, conversion_flags, room_content, run_room

CORPUS = "maadbench-sim"
KIND = "simulated"
SOURCE = "demo"
DEFAULT_ROOMS = 1500
PRETTY_LIMIT = 10_000  # above this many rooms, files are written compact (the importer reads both)
EPOCH = datetime(2026, 3, 2, 8, 0, 0)  # fixed: no wall clock anywhere
FOLDER_SPACING = timedelta(hours=6)  # run folder n starts n x 6 h after the corpus start
ROOM_SLOT = timedelta(hours=1)  # room n of a folder starts n x 1 h after the folder
STRATA = 20  # a verdict stream holds one uniform per 1/STRATA interval in every STRATA draws
BLOCK_ROOMS = 5200  # verdict streams restart every BLOCK_ROOMS rooms: MAADBench's size


class _Stratified:
    """Uniforms in shuffled blocks of STRATA, one per 1/STRATA interval (stratified sampling).

    The generator is made on the first draw, so a stream a block never uses costs nothing.
    """

    __slots__ = ("seed", "rng", "buf")

    def __init__(self, seed: list[int]) -> None:
        self.seed = seed
        self.rng: np.random.Generator | None = None
        self.buf: list[float] = []

    def draw(self) -> float:
        if not self.buf:
            if self.rng is None:
                self.rng = np.random.default_rng(self.seed)
            self.buf = ((self.rng.permutation(STRATA) + self.rng.random(STRATA)) / STRATA).tolist()
        return self.buf.pop()


DECISIONS: tuple[str, ...] = SHORTS + ("second", "repick")  # what a stream decides (model.play_room)


class _StreamBank:
    """The verdict streams of one block of rooms, each made on first use.

    A stream per backbone x difficulty x tool mode x decision x (carries a failure or not):
    stratifying within difficulty and tool mode keeps every Table 2 cell and the tool-call
    rates near their expectation too, not only the pooled Table 3 rates.
    """

    def __init__(self, seed: int, block: int) -> None:
        self.seed, self.block = seed, block
        self.streams: dict[tuple[int, ...], _Stratified] = {}

    def for_room(self, where: Allocation) -> Draw:
        """The draws of one room: its backbone's, difficulty's and tool mode's streams."""
        prefix = (where.backbone, DIFFICULTIES.index(where.difficulty), int(where.tools))
        streams, head = self.streams, [self.seed, 2, self.block]

        def draw(what: str, carried: int) -> float:
            key = (*prefix, DECISIONS.index(what), int(carried > 0))
            stream = streams.get(key)
            if stream is None:
                stream = streams[key] = _Stratified(head + list(key))
            return stream.draw()

        return draw


def _folders() -> list[tuple[str, float, str, bool, bool]]:
    """Every run folder key in a fixed order (its index fixes the folder's start time)."""
    keys = []
    for bb in BACKBONES:
        for t in bb.temperatures:
            for d in DOMAINS:
                for tools in TOOL_MODES:
                    for nightmare in (False, True):
                        keys.append((bb.model, t, d, tools, nightmare))
    return keys


FOLDER_INDEX = {key: n for n, key in enumerate(_folders())}


@dataclass(frozen=True)
class Allocation:
    """Where room index ``r`` of the corpus goes."""

    backbone: int  # index into BACKBONES
    temperature: float
    domain: str
    tools: bool
    difficulty: str
    number: int  # room number in its run folder (room_<number>)
    content: int  # room content number within (domain, difficulty): the room group

    @property
    def folder_key(self) -> tuple[str, float, str, bool, bool]:
        return (BACKBONES[self.backbone].model, self.temperature, self.domain, self.tools,
                self.difficulty == "nightmare")


def allocate(r: int) -> Allocation:
    """Room ``r`` -> backbone ``r % 5``; within a backbone, difficulty, then (temperature,
    domain, tool mode) cycle. A non-nightmare folder receives easy, medium and hard rooms in
    turn, so ``room_000j`` holds the same content in every folder of a clue domain."""
    b, i = r % len(BACKBONES), r // len(BACKBONES)
    bb = BACKBONES[b]
    d = i % len(DIFFICULTIES)
    combos = [(t, dom, tools) for t in bb.temperatures for dom in DOMAINS for tools in TOOL_MODES]
    cycle = i // len(DIFFICULTIES)  # how many full difficulty cycles this backbone has done
    t, dom, tools = combos[cycle % len(combos)]
    turn = cycle // len(combos)  # how many rooms of this difficulty the folder already holds
    difficulty = DIFFICULTIES[d]
    if difficulty == "nightmare":
        return Allocation(b, t, dom, tools, difficulty, turn, turn)
    return Allocation(b, t, dom, tools, difficulty, 3 * turn + d, turn)


def _folder_start(seed: int, key: tuple) -> datetime:
    return EPOCH + timedelta(days=int(seed) % 365) + FOLDER_SPACING * FOLDER_INDEX[key]


def folder_name(seed: int, key: tuple) -> str:
    model, temperature, domain, tools, nightmare = key
    started = _folder_start(seed, key)
    return (f"run_{started.strftime('%Y%m%d_%H%M%S')}_{domain}_{'tool' if tools else 'no_tool'}_{model}_"
            f"{temperature:.1f}{'_nightmare' if nightmare else ''}")


def _relative_path(seed: int, where: Allocation, doc: dict) -> str:
    """``<run folder>/<end time>_EscapeRoom_<room_id>_<escaped|failed>.json``.

    The file is stamped when the room ends: its slot's start plus its run time (kept inside
    the slot, so stamps never collide within a folder).
    """
    key = where.folder_key
    seconds = min(max(1, math.ceil(doc["timing_sec"])), int(ROOM_SLOT.total_seconds()) - 1)
    ended = _folder_start(seed, key) + ROOM_SLOT * where.number + timedelta(seconds=seconds)
    name = (f"{ended.strftime('%Y%m%d%H%M%S')}_EscapeRoom_{doc['room']['room_id']}_"
            f"{'escaped' if doc['escaped'] else 'failed'}.json")
    return f"{folder_name(seed, key)}/{name}"


def _check_range(rooms: int, seed: int, start: int, stop: int | None) -> int:
    if rooms < 1:
        raise ValueError("rooms must be at least 1.")
    if seed < 0:
        raise ValueError("seed must be a whole number >= 0.")
    stop = rooms if stop is None else stop
    if not 0 <= start <= stop <= rooms:
        raise ValueError(f"need 0 <= start <= stop <= rooms, got start={start}, stop={stop}, rooms={rooms}.")
    return stop


def iter_rooms(rooms: int, seed: int, start: int = 0, stop: int | None = None) -> Iterator[tuple[str, dict]]:
    """Yield ``(relative file path, room document)`` for room indices ``start..stop-1``.

    The document is the dict the JSON file holds (plain JSON types only). A room's output
    depends on ``(seed, index)`` alone, never on how a corpus is cut into ranges, so workers
    can each produce a range. ``rooms`` is the corpus size (ranges must lie inside it).
    """
    stop = _check_range(rooms, seed, start, stop)
    if start == stop:
        return
    calibrations = [calibration(bb.model) for bb in BACKBONES]
    failures = [{d: cal.failure(d) for d in DIFFICULTIES} for cal in calibrations]
    block, bank = -1, None
    for r in range(start - start % BLOCK_ROOMS, stop):
        if r // BLOCK_ROOMS != block:
            block = r // BLOCK_ROOMS
            bank = _StreamBank(seed, block)
        where = allocate(r)
        conversion = conversion_flags(seed, where.domain, where.difficulty, where.content)
        plan = play_room(where.difficulty, where.tools, conversion, failures[where.backbone][where.difficulty],
                         calibrations[where.backbone].carry, bank.for_room(where))
        if r < start:  # rooms before ``start`` only advance the block's streams
            continue
        room = {"room_id": f"room_{where.number:04d}",
                **room_content(seed, where.domain, where.difficulty, where.content)}
        doc = run_room(BACKBONES[where.backbone], where.temperature, where.domain, where.tools, room, plan,
                       rng=np.random.default_rng([seed, 3, r]), seed=seed)
        yield _relative_path(seed, where, doc), doc


def simulate(out_dir: Path, rooms: int = DEFAULT_ROOMS, seed: int = 0, *, progress: Progress | None = None) -> dict:
    """Write ``rooms`` simulated room runs under ``out_dir`` in the runner's layout.

    Returns counts: rooms, files, run folders, steps, escaped rooms.
    """
    _check_range(rooms, seed, 0, None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pretty = rooms <= PRETTY_LIMIT
    folders: set[str] = set()
    n_steps = n_escaped = 0
    for n, (rel, doc) in enumerate(iter_rooms(rooms, seed), start=1):
        folder, _, name = rel.partition("/")
        if folder not in folders:
            (out_dir / folder).mkdir(parents=True, exist_ok=True)
            folders.add(folder)
        text = json.dumps(doc, indent=2) if pretty else json.dumps(doc, separators=(",", ":"))
        (out_dir / folder / name).write_text(text, encoding="utf-8")
        n_steps += len(doc["trace"])
        n_escaped += doc["escaped"]
        if progress and n % 250 == 0:
            progress(n / rooms, f"simulated {n:,} of {rooms:,} rooms")
    return {"rooms": rooms, "files": rooms, "run_folders": len(folders), "steps": n_steps, "escaped": n_escaped}
