"""A program's stderr: drained on a thread into a bounded buffer so the program never
blocks on it, its last lines quoted (printable, one line) in the errors about it."""

from __future__ import annotations

import os
import threading
import time

from cosmic_curriculum.system.terminal import printable

STDERR_KEEP_BYTES = 8 * 1024
STDERR_QUOTE_LINES = 3


def one_line(text: str, limit: int = 200) -> str:
    """A program's words as one printable line: its escapes never act on a terminal."""
    flat = printable(" ".join(text.split()), keep_newlines=False)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class StderrTail:
    """Drains a pipe on a thread so the program never blocks on stderr; keeps the end."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._tail = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, name="bot-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.total += len(chunk)
            self._tail += chunk
            if len(self._tail) > 2 * STDERR_KEEP_BYTES:
                del self._tail[: len(self._tail) - STDERR_KEEP_BYTES]

    def join(self, seconds: float) -> None:
        self._thread.join(seconds)

    def quote(self) -> str:
        """`` (stderr: last | lines)`` or ``""``; one line for the error message."""
        time.sleep(0.05)  # let the drain thread catch the program's last words
        lines = bytes(self._tail).decode("utf-8", "replace").splitlines()
        last = [one_line(ln, 160) for ln in lines if ln.strip()][-STDERR_QUOTE_LINES:]
        return f" (stderr: {' | '.join(last)})" if last else ""
