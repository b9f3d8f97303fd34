"""An ONNX file's metadata (``metadata_props``) read straight from its protobuf bytes,
without the onnx package: what the curriculum needs to tell a bot's twin from a stale or
foreign ``.onnx`` before committing it (``source``, ``source_sha256``).

Only the top level of ``ModelProto`` is walked (field 14: ``StringStringEntryProto``
key = 1, value = 2); anything that is not well-formed protobuf is None, never an error.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

METADATA_FIELD = 14  # ModelProto.metadata_props
MAX_BYTES = 256 << 20  # a twin is kilobytes; a file this big is not one


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, bytes | int]]:
    """(field number, wire type, payload) of one message level."""
    out: list[tuple[int, int, bytes | int]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, wire, value))
        elif wire == 2:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise ValueError("truncated field")
            out.append((number, wire, data[i : i + size]))
            i += size
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
    if i != len(data):
        raise ValueError("truncated field")
    return out


def metadata(data: bytes) -> dict[str, str] | None:
    """The metadata of an ONNX model's bytes, or None when they are not protobuf."""
    try:
        props: dict[str, str] = {}
        for number, wire, payload in _fields(data):
            if number != METADATA_FIELD or wire != 2 or not isinstance(payload, bytes):
                continue
            entry = {n: p for n, w, p in _fields(payload) if w == 2 and isinstance(p, bytes)}
            props[entry.get(1, b"").decode()] = entry.get(2, b"").decode()
        return props
    except (ValueError, UnicodeDecodeError):
        return None


def twin_problem(onnx_path: Path) -> str | None:
    """None when ``onnx_path`` is the twin of the bot JSON beside it (same stem): its
    metadata names that file and its sha256. Else why not, in a few words."""
    source = onnx_path.with_suffix(".json")
    try:
        fd = os.open(onnx_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "is not a regular file"
        data = fh.read(MAX_BYTES + 1)
    meta = metadata(data) if len(data) <= MAX_BYTES else None
    if not meta or "source_sha256" not in meta:
        return "is not a bot twin written by cosmic-curriculum (no source_sha256 metadata)"
    try:
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError:
        return f"has no {source.name} beside it"
    if meta.get("source") != source.name or meta["source_sha256"] != digest:
        named = meta.get("source") or "?"
        return f"was written from another bot ({named}, sha256 {meta['source_sha256'][:12]}…)"
    return None
