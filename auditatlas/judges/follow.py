"""A judge that follows a growing corpus: ``auditatlas judge ... --follow [--sample R]
[--every SECONDS]``.

The live receiver (``auditatlas receive``) writes a trace once no span of it arrived for its
``--idle`` seconds, and writes it again, whole, when a late span re-opens it. So no moment says
"this trace is complete"; the follower's rule is the simplest honest one: a run is *settled*
once its step count has not changed for ``--every`` seconds. A run's last change is bounded by
the last write of any store source (``ingested_at``, whole seconds) when the follower first sees
it with that count, so at a start every run of a corpus nobody wrote for ``--every`` seconds is
settled at once, and a run first seen while the receiver writes waits ``--every`` seconds.

Each round (one line on stdout):

1. read the slice's runs and their step counts; note when each count was first seen;
2. read which runs the judge's set already holds (its predictions' runs and its abstained runs);
3. the runs to add: settled, *sampled* (``sampled``: a hash of the seed and the run id, so a
   run's inclusion never changes between rounds or restarts), not held;
4. if any, judge the held runs and the new ones as one set (``engine.judge`` with ``runs``):
   the held runs' replies come from the reply cache (no call), the new runs' calls are made, and
   the set is written as a new version of the judge's one source, atomically. A run is never in
   the set twice, and a follower killed mid-round resumes from the set and the cache.

A run whose trace is re-opened after it was judged is judged again (its prompt changed, so the
cache holds no reply for it) and its predictions replaced, at the next round that adds a run.
Ctrl-C or SIGTERM ends the follower between calls; a round cut short writes nothing (its
replies are cached).
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import AtlasError
from ..view_state.state_fields import copy_shared
from .engine import Cancelled, JudgeConfig, judge, judge_source
from .templates import load

Say = Callable[[str], None]


def sampled(run_id: str, rate: float, seed: int = 0) -> bool:
    """Whether ``run_id`` is in the sample: the same answer for the same run, rate and seed,
    whatever else the corpus holds (a hash, not a draw)."""
    if rate >= 1.0:
        return True
    digest = hashlib.sha256(f"{seed}:{run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


@dataclass
class Follower:
    root: Path
    config: JudgeConfig
    slice: Mapping[str, Any]
    sample: float = 1.0
    seed: int = 0
    every_s: float = 10.0
    say: Say = print
    should_stop: Callable[[], bool] = lambda: False
    clock: Callable[[], float] = time.time
    seen: dict[str, tuple[int, float]] = field(default_factory=dict)  # run -> (n_steps, when first seen so)
    rounds: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < self.sample <= 1.0:
            raise AtlasError(f"--sample must be above 0 and at most 1, not {self.sample}.")
        self.config.check()
        self.slice = copy_shared(self.slice, drop_empty=True)
        self.source = judge_source(self.config, load(self.config.protocol, self.config.template), self.slice)

    def round(self) -> bool:
        """One round; whether it wrote a new version of the set."""
        from queries import runner  # a prediction-set writer reads the store through the query layer

        self.rounds += 1
        query = runner(self.root)
        now = self.clock()
        written = _last_write(self.root, self.source)
        runs = query("judge_follow_runs", {"slice": self.slice})
        for run_id, n in zip(runs["run_id"].astype(str), runs["n_steps"].astype(int)):
            held = self.seen.get(run_id)
            if held is None or held[0] != n:
                self.seen[run_id] = (n, min(now, written) if written is not None else now)
        settled = {r for r in runs["run_id"].astype(str) if now - self.seen[r][1] >= self.every_s}
        chosen = {r for r in settled if sampled(r, self.sample, self.seed)}
        held = _held_runs(query, self.source)
        new = chosen - held
        head = (f"round {self.rounds}: {len(runs):,} run(s) in the slice, {len(settled):,} settled, "
                f"{len(chosen):,} sampled, {len(chosen & held):,} in the set")
        if not new:
            self.say(f"{head}; nothing new to judge")
            return False
        result = judge(self.root, self.config, self.slice, should_stop=self.should_stop, runs=held | new,
                       provenance={"follow": {"sample": self.sample, "seed": self.seed, "every_s": self.every_s,
                                              "rule": "settled (step count unchanged for every_s seconds), "
                                                      "sampled by sha256(seed:run_id)"}})
        m = result.meter
        tail = (f"{len(new):,} new: {m.new_calls:,} new call(s), {m.cached_calls:,} from the cache, "
                f"{result.abstained:,} abstained, {result.not_judged:,} not judged")
        if result.source is None:
            self.say(f"{head}; {tail}; nothing written")
            return False
        self.say(f"{head}; {tail}; wrote {', '.join(result.set_ids)} ({result.judged + result.abstained:,} runs)")
        for note in result.notes:
            self.say(f"note: {note}")
        return True

    def run(self, wait: Callable[[float], bool]) -> int:
        """Rounds until ``should_stop``; ``wait(seconds)`` sleeps and says whether to stop."""
        self.say(f"following slice {json.dumps(self.slice, sort_keys=True)} into source '{self.source}': "
                 f"runs settled for {self.every_s:g} s, sample {self.sample:g} (seed {self.seed}); Ctrl-C stops")
        while not self.should_stop():
            try:
                self.round()
            except Cancelled:
                break
            if wait(self.every_s):
                break
        self.say(f"stopped after {self.rounds} round(s); a round cut short wrote nothing (its replies are cached)")
        return 0


def _last_write(root: Path, own: str) -> float | None:
    """When any source but the judge's own was last written (epoch seconds, rounded up: the
    manifest keeps whole seconds); None when the manifest does not say."""
    from ..store import read_manifest

    stamps = []
    for name, entry in read_manifest(root).get("sources", {}).items():
        at = entry.get("ingested_at") if name != own and isinstance(entry, dict) else None
        try:
            stamps.append(datetime.fromisoformat(at).timestamp())
        except (TypeError, ValueError):
            continue
    return math.ceil(max(stamps)) + 1.0 if stamps else None


def _held_runs(query, source: str) -> set[str]:
    """The runs the judge's sets hold: with predictions, or judged and abstained on."""
    rows = query("judge_source_runs", {"source": source})
    held = {str(r) for r in rows["run_id"].dropna()}
    for params in rows.drop_duplicates("set_id")["params"]:
        try:
            held.update(str(r) for r in json.loads(params).get("abstained_runs") or [])
        except (TypeError, ValueError, AttributeError):
            continue
    return held
