"""A study's measures on disk: ``compare/measures/<run>.json`` holds every measured
checkpoint by its path, sha256, episodes and what else the result depends on, written
atomically, so a resumed compare measures nothing twice."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cosmic_curriculum.system import fsio


class Cache:
    """``compare/measures/<run>.json``: every measured checkpoint by its path and sha256."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        if path.is_file():
            loaded = fsio.read_json(path, "compare measures")
            self.data = loaded if isinstance(loaded, dict) else {}

    def get(self, key: str, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if key not in self.data:
            self.data[key] = make()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fsio.atomic_write_json(self.path, self.data)
        result: dict[str, Any] = self.data[key]
        return result


def checkpoint_key(checkpoint: Path, episodes: int, seed: int) -> str:
    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()[:16]
    return f"{checkpoint.parent.name}/{checkpoint.name}:{digest}:{episodes}:{seed}"
