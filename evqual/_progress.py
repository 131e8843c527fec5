"""A dependency-free progress bar on stderr."""

from __future__ import annotations

import sys
import time


class Progress:
    """Callable progress reporter: ``progress(done)`` redraws at most ~10 times a second.

    Parameters
    ----------
    total : int
        Number of items.
    label : str
        Prefix shown before the bar.
    stream : file, default=sys.stderr
    enabled : bool or None
        ``None`` shows the bar only when ``stream`` is a terminal or when
        ``total`` is large (>= 500 items), so that long runs in logs still
        report progress; ``False`` never shows it.
    """

    def __init__(self, total: int, label: str = "", stream=None, enabled: bool | None = None):
        self.total = max(int(total), 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", lambda: False)()
            enabled = isatty or self.total >= 500
        self.enabled = enabled
        self.start = time.perf_counter()
        self._last = 0.0
        self._tty = getattr(self.stream, "isatty", lambda: False)()

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        final = done >= self.total
        if not final and now - self._last < (0.1 if self._tty else 2.0):
            return
        self._last = now
        frac = done / self.total if self.total else 1.0
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        elapsed = now - self.start
        msg = f"{self.label} [{bar}] {done}/{self.total} {elapsed:.1f}s"
        if self._tty:
            self.stream.write("\r" + msg + ("\n" if final else ""))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()
