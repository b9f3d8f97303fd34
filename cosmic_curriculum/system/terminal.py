"""Text from outside (a program's stderr, a log's tail, a file name) made safe to print.

A subprocess writes what it likes; quoted in an error line, an ESC sequence would clear
the screen, retitle the window or hide the rest of the message. :func:`printable` shows
every control and format character but newline escaped (``\\x1b``), the rule `status`
follows for what a workspace's files say.
"""

from __future__ import annotations

import unicodedata


def printable(text: str, keep_newlines: bool = True) -> str:
    """``text`` with every control or format character (Unicode category C: ESC, CR, BEL,
    DEL, C1 controls, bidi overrides, lone surrogates) shown as its Python escape; newlines
    are kept when ``keep_newlines``."""
    if all(ch.isprintable() or (keep_newlines and ch == "\n") for ch in text):
        return text
    return "".join(
        ch
        if (keep_newlines and ch == "\n") or unicodedata.category(ch)[0] != "C"
        else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        for ch in text
    )
