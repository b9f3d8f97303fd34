"""Follow an evaluation command's streamed episodes, and ask it to stop once the gate
has decided (docs/ENVIRONMENTS.md). The gate's verdict still comes from its record;
this only lets a sequential rule end the evaluation early."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cosmic_curriculum.evaluation.stream import Streamed, decided, parse_episode
from cosmic_curriculum.workspace.config import GateSettings

STREAM_ENV = "COSMIC_CURRICULUM_EVAL_STREAM"
STOP_ENV = "COSMIC_CURRICULUM_EVAL_STOP"


class EpisodeStream:
    """The stream file of one evaluation: read on every poll, the stop file made once the
    gate has decided. A malformed line is reported once and ends the following (the
    record decides)."""

    def __init__(
        self,
        stream: Path,
        stop: Path,
        settings: GateSettings,
        planned: int,
        warn: Callable[[str], None],
    ) -> None:
        self.stream, self.stop, self.settings, self.planned = stream, stop, settings, planned
        self.warn = warn
        self.episodes: list[Streamed] = []
        self.offset = 0
        self.done = False
        stream.parent.mkdir(parents=True, exist_ok=True)
        stream.write_bytes(b"")  # a fresh stream: an earlier run's lines are not ours
        stop.unlink(missing_ok=True)

    def env(self) -> dict[str, str]:
        return {STREAM_ENV: str(self.stream.absolute()), STOP_ENV: str(self.stop.absolute())}

    def poll(self) -> None:
        if self.done:
            return
        try:
            with open(self.stream, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except OSError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
        self.offset += len(complete)
        for raw in complete.decode("utf-8", "replace").splitlines():
            if not raw.strip():
                continue
            try:
                self.episodes.append(parse_episode(raw))
            except ValueError as exc:
                where = f"{self.stream}: episode {len(self.episodes) + 1}"
                self.warn(f"{where}: {exc}; following the stream stops (the record decides)")
                self.done = True
                return
        if self.episodes and decided(self.settings, self.episodes, self.planned):
            self.stop.touch()
            self.done = True

    def close(self) -> None:
        """Remove both files: what decides is in the record."""
        self.stream.unlink(missing_ok=True)
        self.stop.unlink(missing_ok=True)
