"""What a long step is doing, on one stderr line (the CLI uses it only on a terminal).

The rate, and so the ETA, is measured from the first update on: the time before it is start-up
(worker processes, the extractor's matchers), and counting it made the first ETA of a 20 s run
read 4:42. No ETA is shown until the rate has been measured for a second. This is what
``click.progressbar`` cannot do (its ETA averages over the time since the bar started, start-up
included), and why kg keeps its own bar.

>>> import io
>>> out = io.StringIO()
>>> with Progress(3, "loading", stream=out) as bar:
...     bar.update(3)
>>> out.getvalue().rsplit("\\r", 1)[-1].startswith("loading 3/3 100%")
True
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """``with Progress(total, label) as bar: bar.update(n)``; a final line says how long it took.

    ``clock`` gives the time in seconds (``time.monotonic``; a test passes its own).
    """

    def __init__(self, total: int, label: str, unit: str = "papers",
                 stream: TextIO | None = None, min_interval: float = 0.2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.label, self.unit = total, label, unit
        self.stream = stream or sys.stderr
        self.min_interval = min_interval
        self.clock = clock
        self.done = 0
        self.started = clock()
        self._first: tuple[float, int] | None = None  # (time, count) at the first update
        self._shown = 0.0
        self._width = 0

    def __enter__(self) -> Progress:
        self._show(self.clock())
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = self.clock() - self.started
        self._write(f"{self.label} {self.done}/{self.total} "
                    f"{self._percent()}% in {elapsed:.1f} s\n")

    def update(self, n: int) -> None:
        now = self.clock()
        self.done += n
        if self._first is None:  # the items of the first update took the start-up time too
            self._first = (now, self.done)
        if now - self._shown >= self.min_interval or self.done >= self.total:
            self._show(now)

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left at the rate since the first update; None until measured for 1 s."""
        now = self.clock() if now is None else now
        if self._first is None or now - self._first[0] < 1.0 or self.done <= self._first[1]:
            return None
        rate = (self.done - self._first[1]) / (now - self._first[0])
        return (self.total - self.done) / rate

    def _percent(self) -> int:
        return 100 if not self.total else min(100, 100 * self.done // self.total)

    def _show(self, now: float) -> None:
        self._shown = now
        line = f"{self.label} {self.done}/{self.total} {self._percent()}%"
        eta = self.eta(now)
        if eta is not None:
            rate = (self.done - self._first[1]) / (now - self._first[0])  # type: ignore[index]
            line += f"  {rate:,.0f} {self.unit}/s  ETA {int(eta) // 60}:{int(eta) % 60:02d}"
        self._write(line)

    def _write(self, line: str) -> None:
        body = line.rstrip("\n")
        pad = " " * max(0, self._width - len(body))
        self._width = len(body)
        self.stream.write("\r" + body + pad + line[len(body):])
        self.stream.flush()


def step(name: str, stream: TextIO | None = None) -> None:
    """Say on its own line that a step without a count has started ("writing graph.nt …")."""
    stream = stream or sys.stderr
    stream.write(f"{name} …\n")
    stream.flush()
