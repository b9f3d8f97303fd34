"""Text from files (reasons, errors, bot labels, names) in REPORT.md and its HTML page.

A reason someone typed, a bot's stderr in an attempt error or a hand-edited state reaches
the committed REPORT.md and the page a browser opens. Such text is inert there:
:func:`text` shows control characters escaped (``\\x1b``, as `status` does) and escapes
what Markdown or HTML would read as markup (``<img onerror=...>`` stays text, ``[x](...)``
never becomes a link); :func:`code` puts a name in a code span only when it cannot break
out of it. The page's renderer reads those escapes back (:func:`unescape`) and makes
links only to http(s) and relative targets (:func:`safe_href`).
"""

from __future__ import annotations

import html
import re
import unicodedata
from urllib.parse import urlsplit

# Markdown's and HTML's markup characters in running text; `|` is the table's (the
# renderer escapes it in cells); `_` inside words is no emphasis in GitHub's Markdown.
_MARKUP = re.compile(r"[\\`\[\]<>&*]")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def visible(text: str) -> str:
    """``text`` with every control, format and surrogate character shown escaped
    (newlines too: a reason is one line of a report)."""
    if text.isprintable():
        return text
    return "".join(
        ch
        if unicodedata.category(ch)[0] != "C"
        else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        for ch in text
    )


def text(value: str) -> str:
    """``value`` as Markdown that shows exactly it: markup escaped, controls visible."""
    return _MARKUP.sub(lambda m: _ENTITIES.get(m[0], "\\" + m[0]), visible(value))


_PLAIN_NAME = re.compile(r"[^`<>&\\|\[\]]+")


def code(value: str) -> str:
    """``value`` as a code span when nothing in it can end or escape the span, else as
    :func:`text` (a label like ``exec:python3 -c `...` `` stays inert either way)."""
    shown = visible(value)
    if shown and _PLAIN_NAME.fullmatch(shown) and shown.strip() == shown:
        return f"`{shown}`"
    return text(value)


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])|&(#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")


def unescape(markdown_text: str) -> str:
    """The text a Markdown renderer shows for ``markdown_text`` outside code spans:
    backslash escapes and entity references read back."""
    return _ESCAPE.sub(lambda m: m[1] if m[1] is not None else html.unescape(m[0]), markdown_text)


def safe_href(href: str) -> bool:
    """Whether ``href`` may be a link: http(s), or relative to the report (never
    ``javascript:``, ``data:``, another scheme or a network path ``//host``)."""
    if not href or not href.isprintable() or any(ch.isspace() for ch in href):
        return False
    if href.startswith(("//", "\\")):
        return False
    scheme = urlsplit(href).scheme.lower()
    return scheme in ("http", "https") or (scheme == "" and ":" not in href.split("/")[0])
