"""The one progress protocol and its two drawers: the command line's bar (tqdm on a terminal,
a line per tenth elsewhere) and the app's ``st.progress``."""
from __future__ import annotations

import io

from streamlit.testing.v1 import AppTest

from auditatlas.commands.progress_bar import ProgressBar
from auditatlas.progress import share
from cli_support import run_cli


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_pipe_one_line_per_tenth_and_the_last():
    out = io.StringIO()
    bar = ProgressBar(out)
    for i in range(201):
        bar(i / 200, f"room {i} of 200")
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 11
    assert lines[0].startswith("[  0%]") and lines[0].endswith("room 0 of 200")
    assert lines[-1].startswith("[100%]") and lines[-1].endswith("room 200 of 200")
    assert "\r" not in out.getvalue()


def test_on_a_terminal_one_redrawn_bar():
    out = Terminal()
    bar = ProgressBar(out)
    for i in range(11):
        bar(i / 10, f"phase {i}")
    bar(1.7, "past the end")  # a producer's rounding is clamped, never drawn past 100%
    bar.close()
    text = out.getvalue()
    assert "\r" in text and text.endswith("\n") and text.count("\n") == 1
    last = text.rstrip("\n").split("\r")[-1]
    assert last.startswith("100%|") and last.endswith("past the end")


def test_a_phase_is_heard_as_its_share_of_the_whole():
    heard: list[tuple[float, str]] = []
    second = share(lambda f, m: heard.append((f, m)), 0.5, 0.9)
    for fraction in (0.0, 0.5, 1.0, 2.0):
        second(fraction, "half")
    assert [round(f, 6) for f, _ in heard] == [0.5, 0.7, 0.9, 0.9]


def test_the_demo_command_draws_its_progress_per_tenth(tmp_path):
    done = run_cli("--store", str(tmp_path / "store"), "demo", "--rooms", "40", "--no-catchbench", "--workers", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    shares = [line.split("]")[0] + "]" for line in done.stderr.splitlines() if line.startswith("[")]
    assert shares[-1] == "[100%]" and len(shares) == len(set(shares)) <= 11
    assert "40/40 rooms" in done.stderr


def test_the_app_draws_the_producers_sentence_as_text():
    def page():
        from components.progress_view import ProgressView

        bar = ProgressView()
        bar(0.5, "reading **room_7** <b>x</b>")
        bar(1.4, "reading **room_7** <b>x</b>")

    at = AppTest.from_function(page).run()
    (drawn,) = at.get("progress")
    assert drawn.proto.value == 100
    # Markdown's characters escaped: the sentence shows as the text it is, no bold, no HTML.
    assert drawn.proto.text == r"reading \*\*room\_7\*\* \<b\>x\</b\>"
