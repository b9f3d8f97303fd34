"""``python -m cosmic_curriculum.launchers.plain_log LOG``: a terminal's bytes on stdin
(what tmux's ``pipe-pane`` gives of the detached run: ``\\r\\n`` line ends, escape
sequences for colours, bold and redraws) appended to ``LOG`` as plain text lines.

The detached run's `logs/curriculum.log` is meant to be read with `less`, `grep` and
`tail -f`; a pty adds ``\\r`` to every line whatever the program writes, so the log is
made plain here, line by line, flushed as it comes.
"""

from __future__ import annotations

import re
import sys
from typing import BinaryIO

# CSI (colours, cursor moves), OSC (window titles) and the two-byte escapes.
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
# Other control characters but tab and line feed (\r is handled first).
CONTROLS = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")


def plain_line(line: bytes) -> bytes:
    """One line as plain text: escapes and controls gone; a carriage return that redraws
    the line in place makes a line of its own; a line of nothing but escapes is dropped."""
    raw = line.rstrip(b"\n").rstrip(b"\r")
    if not raw:
        return b"\n"  # a blank line stays
    parts = [CONTROLS.sub(b"", p).rstrip() for p in ESCAPES.sub(b"", raw).split(b"\r")]
    return b"".join(p + b"\n" for p in parts if p.strip())


def copy(source: BinaryIO, log: BinaryIO) -> None:
    for line in source:
        out = plain_line(line)
        if out:
            log.write(out)
            log.flush()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m cosmic_curriculum.launchers.plain_log LOG\n")
        return 2
    with open(argv[0], "ab") as log:
        copy(sys.stdin.buffer, log)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
