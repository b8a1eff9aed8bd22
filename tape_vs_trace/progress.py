"""Progress on stderr for the subcommands that work for minutes (saved-all, report, publish): a line as each step
starts and, while one step runs long, a heartbeat line repeating it, so their output is never quiet for 10 s."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

# Seconds without a line before the heartbeat repeats the step; with its wake-ups, under the 10 s promised.
INTERVAL_S = 8.0

Step = Callable[[str], None]  # announces the step that starts now, as "drawing the figures of <machine>"


def quiet(step: str) -> None:
    """The Step that prints nothing: the library functions' default, so that only the command line shows progress."""


class Progress:
    """`progress(step)` prints "[<command> <seconds> s] <step>" on `stream` (sys.stderr as it is at the time);
    inside `with progress:`, a thread repeats the current step with its time so far once `interval` seconds pass
    without a line. Nothing before the first step: a command that refuses its input prints only its error."""

    def __init__(self, command: str, stream: TextIO | None = None, interval: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic):
        self.command, self.stream, self.interval, self.clock = command, stream, interval, clock
        self.start = self.last = self.step_start = clock()
        self.step: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, step: str) -> None:
        with self._lock:
            self.step, self.step_start = step, self.clock()
            self._print(step, self.step_start)

    def beat(self) -> None:
        """The heartbeat's check, made by its thread several times per interval (and by a test with a fake clock)."""
        with self._lock:
            now = self.clock()
            if self.step is not None and now - self.last >= self.interval:
                self._print(f"{self.step} (still running, {now - self.step_start:.0f} s)", now)

    def _print(self, text: str, now: float) -> None:
        self.last = now
        # one write per line: a warning printed meanwhile by the main thread cannot land inside it
        (self.stream or sys.stderr).write(f"[{self.command} {now - self.start:.0f} s] {text}\n")
        (self.stream or sys.stderr).flush()

    def _beat_until_stopped(self) -> None:
        while not self._stop.wait(self.interval / 16):
            self.beat()

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._beat_until_stopped, name=f"{self.command} heartbeat",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
