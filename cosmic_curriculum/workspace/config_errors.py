"""`stages.toml` errors as one line: `file:line: key: problem`.

pydantic says which key is wrong; this finds its line in the TOML text (best effort) and
says the problem in the user's terms.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

# The union tags pydantic puts after `reference_bot` (a path, or {exec = [...]}).
REFERENCE_TAGS = ("path", "exec")


def _keys_doc(loc: tuple[Any, ...]) -> str:
    """Where the keys of the table at ``loc`` are documented."""
    tables = {str(part) for part in loc[:-1]}
    if tables & {"env", "trainer"}:
        return "docs/ENVIRONMENTS.md"
    if "gate" in tables:
        return "docs/GATES.md"
    if "launcher" in tables:
        return "docs/SCALING.md"
    return "README.md, `stages.toml`"


SECRET_NOT_SHOWN = "(the value is not shown)"


def describe(path: Path, text: str, exc: ValidationError) -> str:
    """The first validation error as `file:line: key: problem`."""
    err = exc.errors()[0]
    loc = _untagged(tuple(err["loc"]))
    key = _dotted(loc)
    line = _locate(text, loc)
    where = f"{path}:{line}" if line else str(path)
    if err["type"] == "extra_forbidden":
        problem = f"unknown key '{loc[-1]}'; check its spelling (see {_keys_doc(loc)})"
    elif err["type"] == "missing":
        problem = "is required"
    else:
        msg = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        # A value that holds a secret is not repeated (SECRET_NOT_SHOWN ends its message).
        scalar = isinstance(value, str | int | float | bool) and not msg.endswith(SECRET_NOT_SHOWN)
        problem = f"{msg} (got {toml_value(value)})" if scalar else msg
        if err["type"] in NUMBER_TYPES and isinstance(value, bool | str):
            problem = _not_a_number(err["type"], value)
    if key == "stages" and err["type"] == "too_short":
        problem = "the curriculum has no stages; add at least one [[stages]] table"
    if loc[-2:] == ("reference_bot", "exec") and err["type"] == "list_type":
        problem = (
            'must be an argv list like ["./mybot", "--level", "3"], never a shell string '
            f"(got {err.get('input')!r})"
        )
    if loc[-1] == "reference_bot" and err["type"] == "string_type":
        problem = (
            f'expected a bot file\'s path or a program as {{exec = ["./mybot", ...]}} '
            f"(got {err.get('input')!r})"
        )
    return f"{where}: {key}: {problem}"


# pydantic's error types of a number setting given something else.
NUMBER_TYPES = frozenset({"int_type", "float_type", "int_parsing", "float_parsing"})


def toml_value(value: Any) -> str:
    """``value`` as stages.toml spells it: ``true``, not Python's ``True``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _not_a_number(error_type: str, value: bool | str) -> str:
    kind = "an integer" if error_type.startswith("int") else "a number"
    if isinstance(value, bool):
        return f"must be {kind}, not a boolean (got {toml_value(value)})"
    try:
        float(value)
    except ValueError:
        return f"must be {kind}, not a string (got {value!r})"
    return f"must be {kind}, not a string (got {value!r}); write it without quotes"


def _untagged(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """``loc`` without the union tag pydantic puts after ``reference_bot``."""
    for i, part in enumerate(loc[:-1]):
        if part == "reference_bot" and loc[i + 1] in REFERENCE_TAGS:
            return loc[: i + 1] + loc[i + 2 :]
    return loc


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(file)"


def _locate(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line number of the key at ``loc`` in the TOML text (1-based)."""
    lines = text.splitlines()
    start, end = 0, len(lines)
    parts = list(loc)
    # Narrow to the table the key lives in: [[stages]] number k, [defaults], [gate],
    # [launcher], [env], [trainer] ...
    if parts and parts[0] == "stages" and len(parts) > 1 and isinstance(parts[1], int):
        headers = [i for i, ln in enumerate(lines) if ln.strip() == "[[stages]]"]
        k = parts[1]
        if k < len(headers):
            start = headers[k]
            end = headers[k + 1] if k + 1 < len(headers) else len(lines)
            if len(parts) == 2:
                return start + 1
        parts = parts[2:]
        if parts and parts[0] == "gate":
            for i in range(start, end):
                if lines[i].strip() == "[stages.gate]":
                    start = i
                    break
            parts = parts[1:]
    elif parts and parts[0] in ("defaults", "gate", "launcher", "env", "trainer"):
        for i, ln in enumerate(lines):
            if ln.strip() == f"[{parts[0]}]":
                if len(parts) == 1:  # the table as a whole: its header
                    return i + 1
                start = i
                break
        parts = parts[1:]
    elif parts:
        first_table = next(
            (i for i, ln in enumerate(lines) if ln.strip().startswith("[")), len(lines)
        )
        end = first_table
    key = next((p for p in parts if isinstance(p, str)), None)
    if key is None:
        return None
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start, end):
        if pattern.match(lines[i]):
            return i + 1
    return None
