"""The ``judge`` subcommand: an LLM judge over the slice's runs, through any OpenAI-compatible
Chat Completions endpoint, written as a prediction set (``auditatlas/judges``).

Progress goes to stderr, the summary to stdout. The API key is read from the environment
variable ``--api-key-env`` names and never printed.

With ``--follow`` the command keeps judging the slice's runs as a live corpus grows (the
receiver's), one line per round, until Ctrl-C or SIGTERM (``judges/follow.py``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..slice_and_labels import SLICE_COLUMNS as SLICE_KEYS
from .argument_types import count, non_negative, parse_slice, positive_int, positive_number, share


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("judge", help="run an LLM judge (Who&When protocols, or a per-step score) over a slice "
                                     "through any OpenAI-compatible endpoint; write its prediction set")
    p.add_argument("--protocol", required=True,
                   choices=["all-at-once", "step-by-step", "binary-search", "step-score"],
                   help="all-at-once (one call per run), step-by-step (one per step until the mistake), "
                        "binary-search (about log2 N calls), step-score (a probability per step)")
    p.add_argument("--model", required=True, help="the model name the endpoint serves")
    p.add_argument("--base-url", required=True, metavar="URL",
                   help="the endpoint's OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                   help="environment variable holding the API key (default OPENAI_API_KEY; unset: no key)")
    p.add_argument("--slice", action="append", default=[], metavar="KEY=VALUE",
                   help=f"restrict to runs with KEY=VALUE (repeatable; keys: {', '.join(SLICE_KEYS)})")
    p.add_argument("--with-truth", action="store_true", help="show the judge the task's correct answer")
    p.add_argument("--template", metavar="FILE", help="your own prompt template ($variables; see the README)")
    p.add_argument("--max-connections", type=positive_int, default=4, metavar="N",
                   help="calls in flight at once (default 4)")
    p.add_argument("--max-calls", type=positive_int, metavar="N", help="stop after N new calls (cached replies are free)")
    p.add_argument("--max-cost", type=non_negative, metavar="X", help="stop once new calls cost X (needs the prices)")
    p.add_argument("--price-in", type=non_negative, metavar="X", help="price per million input tokens")
    p.add_argument("--price-out", type=non_negative, metavar="X", help="price per million output tokens")
    p.add_argument("--timeout", type=positive_number, default=120.0, metavar="S", help="per-call timeout (default 120 s)")
    p.add_argument("--max-retries", type=count, default=5, metavar="N",
                   help="retries of a call on 429, 5xx, timeouts (default 5; 0: none)")
    p.add_argument("--temperature", type=non_negative, default=0.0, metavar="T", help="sampling temperature (default 0)")
    p.add_argument("--max-tokens", type=positive_int, metavar="N", help="reply token limit (default: the endpoint's)")
    p.add_argument("--window", type=positive_int, default=40, metavar="N",
                   help="step-score: steps per call for long runs (default 40)")
    p.add_argument("--follow", action="store_true",
                   help="keep judging: each round judges the slice's runs settled since the last one (a received "
                        "corpus as it grows), until Ctrl-C or SIGTERM")
    p.add_argument("--sample", type=share, default=1.0, metavar="R",
                   help="--follow: judge this share of the runs (0 < R <= 1; seeded by the run id, so a run's "
                        "inclusion is stable; default 1)")
    p.add_argument("--seed", type=int, default=0, help="--follow: the sample's seed (default 0)")
    p.add_argument("--every", type=positive_number, default=10.0, metavar="SECONDS",
                   help="--follow: seconds between rounds, and how long a run's steps must stay unchanged before it "
                        "is judged (default 10)")
    p.set_defaults(run=run, reads=True, writes=True)


def run(args: argparse.Namespace, root: Path) -> int:
    from ..judges.engine import JudgeConfig, judge
    from .progress_bar import ProgressBar

    config = JudgeConfig(
        protocol=args.protocol.replace("-", "_"), model=args.model, base_url=args.base_url,
        api_key_env=args.api_key_env, template=args.template, with_truth=args.with_truth,
        max_connections=args.max_connections, max_calls=args.max_calls, max_cost=args.max_cost,
        price_in=args.price_in, price_out=args.price_out, timeout_s=args.timeout, max_retries=args.max_retries,
        temperature=args.temperature, max_tokens=args.max_tokens, window=args.window)
    if args.follow:
        return _follow(args, root, config)
    if (args.sample, args.every) != (1.0, 10.0):
        print("error: --sample and --every go with --follow.", file=sys.stderr)
        return 2
    bar = ProgressBar()
    try:
        result = judge(root, config, parse_slice(args.slice), progress=bar)
    except KeyboardInterrupt:
        bar.close()
        print("error: interrupted; nothing was written (every reply so far is cached: run the same command "
              "again to resume).", file=sys.stderr)
        return 130
    finally:
        bar.close()
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in result.lines():
        print(line)
    if result.source is None:
        print("error: no run was judged; nothing was written.", file=sys.stderr)
        return 1
    for set_id, params in result.params.items():
        rate = params["abstention_rate"]
        print(f"{set_id}: {params['runs']:,} runs, abstained {params['abstained']:,}"
              f"{f' ({rate:.1%})' if rate is not None else ''} {params['abstentions'] or ''}; "
              f"{params['tokens_per_run']:,} tokens and {params['calls_per_run']} calls per run")
    print(f"wrote {len(result.set_ids)} prediction set(s) into source '{result.source}' of {root}")
    return 0


def _follow(args: argparse.Namespace, root: Path, config) -> int:
    """Rounds until SIGTERM or Ctrl-C, each a line on stdout. Like the receiver, the follower
    leaves warming the store's derived tables to their first reader (``writes`` is cleared)."""
    import signal
    import threading

    from ..judges.follow import Follower

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    args.writes = False
    try:
        follower = Follower(root, config, parse_slice(args.slice), sample=args.sample, seed=args.seed,
                            every_s=args.every, say=lambda line: print(line, flush=True), should_stop=stop.is_set)
        return follower.run(stop.wait)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
