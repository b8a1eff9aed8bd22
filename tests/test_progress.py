"""tape_vs_trace.progress: a line as each step starts and, while one runs long, a heartbeat, so that saved-all,
report and publish never go quiet for 10 s; checked on a fake clock, and once through the real thread on a fake
slow step (a few hundredths of a second, not 10 s)."""

from __future__ import annotations

import io
import re
import threading

from tape_vs_trace import progress
from tape_vs_trace.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_step_is_a_line_and_a_long_step_a_heartbeat_every_interval() -> None:
    clock, stream = Clock(), io.StringIO()
    p = Progress("report", stream, interval=8.0, clock=clock)
    clock.now += 30
    p.beat()
    assert stream.getvalue() == "", "no line before the first step: bad input prints only its error"
    p("drawing the figures of m (1 of 2)")
    for now in (137.9, 138.0, 145.0, 146.0):
        clock.now = now
        p.beat()
    p("writing summary.md")
    clock.now = 153.9
    p.beat()
    assert stream.getvalue().splitlines() == [
        "[report 30 s] drawing the figures of m (1 of 2)",
        "[report 38 s] drawing the figures of m (1 of 2) (still running, 8 s)",
        "[report 46 s] drawing the figures of m (1 of 2) (still running, 16 s)",
        "[report 46 s] writing summary.md"]


def test_with_the_threads_checks_no_two_lines_are_10_s_apart() -> None:
    """The thread checks every interval / 16: with steps short and long, no two lines are 10 s apart."""
    clock, written = Clock(), []

    class Stream(io.StringIO):
        def write(self, text: str) -> int:
            written.append(clock.now)  # one write per line
            return len(text)

    p = Progress("saved-all", Stream(), clock=clock)
    starts = {0: "a", 1: "b", 500: "c", 900: "d"}  # the ticks at which a step starts
    for tick in range(1200):
        clock.now = 100 + tick * progress.INTERVAL_S / 16
        if tick in starts:
            p(starts[tick])
        p.beat()
    assert len(written) > len(starts) and max(b - a for a, b in zip(written, written[1:])) < 10


def test_the_thread_beats_during_a_slow_step_and_stops_with_the_block() -> None:
    beaten = threading.Event()

    class Stream(io.StringIO):
        def write(self, text: str) -> int:
            if "still running" in text:
                beaten.set()
            return super().write(text)

    stream = Stream()
    with Progress("publish", stream, interval=0.02) as p:
        p("asv publish: Detecting steps (44 %)")
        assert beaten.wait(10), "no heartbeat during a slow step"  # the fake slow step: done once it has beaten
    assert not p._thread.is_alive()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[publish 0 s] asv publish: Detecting steps (44 %)"
    assert re.fullmatch(r"\[publish \d+ s\] asv publish: Detecting steps \(44 %\) \(still running, \d+ s\)", lines[1])
    count = len(lines)
    threading.Event().wait(0.1)
    assert len(stream.getvalue().splitlines()) == count, "beats after the block ended"


def test_quiet_is_the_default_step_and_prints_nothing(capsys) -> None:
    progress.quiet("anything")
    assert capsys.readouterr() == ("", "")
