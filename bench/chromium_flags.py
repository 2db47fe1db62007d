"""Chromium's CPU per page visit under sets of command-line flags, one warm app server, in one
process (so the sets are compared under the same load). Not a test: nothing is asserted.

    .venv/bin/python bench/chromium_flags.py --store /tmp/teststores/app [--rounds 3] [SET ...]

Each round opens, for every flag set in turn, a new Chromium profile (the suite's flags plus
the set's), warms it on ``/``, then visits five pages one after another (each in a new tab,
waited on as the browser tests wait: tests/browser_support.wait_idle) and sums the CPU time of
every Chromium process over the five visits, read from ``/proc``. The server's caches are warm
after the first visit, so what differs between sets is Chromium's own work.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("AUDITATLAS_KEEP_BOARDS", "0")

from browser_support import CHROMIUM, CHROMIUM_ARGS, wait_idle  # noqa: E402
from components import serve  # noqa: E402

VISITS = [("/boards?tab=POST", "rests on"), ("/explorer", "Step"), ("/propagation", "Propagation"),
          ("/detectors", "ROC"), ("/", "Action success rate per backbone")]
# The suite's flags are CHROMIUM_ARGS; "without" takes back out the four that lower a visit's CPU.
ADDED = ["--force-prefers-reduced-motion", "--disable-threaded-animation", "--disable-threaded-scrolling",
         "--disable-checker-imaging"]
SETS = {
    "suite": [],
    "without": None,  # CHROMIUM_ARGS less ADDED
    "no-gpu-compositing": ["--disable-gpu-compositing"],
    "low-end": ["--enable-low-end-device-mode"],
    "in-process-gpu": ["--in-process-gpu"],
    # V8's tiers: a page visit of a few seconds may not pay back TurboFan's compiles.
    "js-maglev": ["--js-flags=--max-opt=2"],
    "js-sparkplug": ["--js-flags=--max-opt=1"],
    "process-per-site": ["--process-per-site"],
    "renderer-limit-1": ["--renderer-process-limit=1"],
    "no-gpu-raster": ["--disable-gpu-rasterization"],
    "raster-1": ["--num-raster-threads=1"],
}


def _chromium_cpu_s() -> float:
    hz, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"chromium" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])  # utime, stime and their waited children
        except (OSError, IndexError):
            pass
    return total / hz


def _args(name: str) -> list[str]:
    if SETS[name] is None:
        return [a for a in CHROMIUM_ARGS if a not in ADDED]
    return CHROMIUM_ARGS + SETS[name]


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "chromium_flags.json")
    parser.add_argument("sets", nargs="*", help=f"flag sets, of {', '.join(SETS)} (default: suite without)")
    args = parser.parse_args()
    args.sets = args.sets or ["suite", "without"]
    unknown = [name for name in args.sets if name not in SETS]
    if unknown:
        parser.error(f"unknown flag set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    rows = []
    with serve.running(args.store) as url, sync_playwright() as pw:
        for round_ in range(args.rounds):
            for name in args.sets:
                profile = tempfile.mkdtemp(prefix="bench-chromium-")
                context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                                args=_args(name))
                try:
                    page = context.new_page()
                    page.set_viewport_size({"width": 1400, "height": 1800})
                    page.goto(url + "/")
                    wait_idle(page, "Action success")
                    page.close()
                    cpu0, t0 = _chromium_cpu_s(), time.perf_counter()
                    for path, text in VISITS:
                        page = context.new_page()
                        page.set_viewport_size({"width": 1400, "height": 1800})
                        page.goto(url + path)
                        wait_idle(page, text)
                        page.close()
                    row = {"round": round_, "set": name, "chromium_cpu_s": round(_chromium_cpu_s() - cpu0, 2),
                           "wall_s": round(time.perf_counter() - t0, 2), "visits": len(VISITS)}
                finally:
                    context.close()
                    shutil.rmtree(profile, ignore_errors=True)
                rows.append(row)
                print(f"round {round_} {name:20s} Chromium {row['chromium_cpu_s']:6.1f} CPU-s for {len(VISITS)} visits, "
                      f"{row['wall_s']:5.1f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
