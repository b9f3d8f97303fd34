"""Reading and writing `curriculum_state.json`: a bad file is refused, never overwritten;
every write is atomic."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from cosmic_curriculum.errors import DamagedFileError, StateError
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.system.fsio import atomic_write_json, read_json
from cosmic_curriculum.workspace.state import SCHEMA_VERSION, CurriculumState


def load_state(path: Path) -> CurriculumState:
    """Load the state; a missing file is a fresh curriculum, anything bad is refused.

    A refused file is never overwritten: the error names it, says what is wrong and how
    to get the last committed copy back.
    """
    path = Path(path)
    if not path.exists():
        return CurriculumState(created_at=utc_now())
    data = read_json(path, "curriculum state")
    if not isinstance(data, dict):
        raise DamagedFileError(
            path, f"curriculum state must be a JSON object, got {type(data).__name__}"
        )
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise DamagedFileError(path, f"schema_version {version!r} is invalid")
    if version > SCHEMA_VERSION:
        raise StateError(
            f"{path}: schema_version {version} was written by a newer cosmic-curriculum "
            f"(this one reads up to {SCHEMA_VERSION}); upgrade with `pip install -U "
            "cosmic-curriculum`"
        )
    try:
        state = CurriculumState(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise DamagedFileError(path, f"{key}: {err['msg']}") from None
    state.schema_version = SCHEMA_VERSION
    return state


def save_state(path: Path, state: CurriculumState) -> None:
    """Write the state atomically (the old file survives any crash or full disk)."""
    state.updated_at = utc_now()
    if state.created_at is None:
        state.created_at = state.updated_at
    atomic_write_json(Path(path), state.to_json())


def check_stage_range(state: CurriculumState, n_stages: int, path: Path) -> None:
    """A state pointing past the configured stages means the config lost stages."""
    limit = n_stages if state.status == "done" else n_stages - 1
    if state.stage_index > limit:
        raise StateError(
            f"{path}: stage_index {state.stage_index} is out of range for the {n_stages} "
            "stage(s) in the config; restore the stages you removed from stages.toml or "
            "point --config at the curriculum this state belongs to"
        )
