"""Reading `stages.toml` (and the packaged presets): any problem is one line naming the
file, the line and the key (:mod:`.config_errors`)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from cosmic_curriculum import DATA_DIR
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_errors import describe

PRESETS = ("default", "quick", "bare", "doorkey", "connect4")
# The presets of the arena game: their workspaces get its scripted bots and trainer script.
ARENA_PRESETS = ("default", "quick")


def preset_path(name: str) -> Path:
    """The packaged `stages.toml` of a preset (one of :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ConfigError(f"--preset {name!r} is unknown; choose one of: {', '.join(PRESETS)}")
    return DATA_DIR / "presets" / f"{name}.toml"


def load_config(path: Path) -> CurriculumConfig:
    """Read and validate ``path``; any problem is a one-line :class:`ConfigError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: curriculum file not found; pass --config PATH or create one with "
            "`cosmic-curriculum init DIR`"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the curriculum file: {exc}") from None
    # Some editors start UTF-8 files with a byte-order mark, which TOML does not allow;
    # it carries no meaning, so it is dropped rather than reported as "Invalid statement".
    text = text.removeprefix(fsio.BOM)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        config = CurriculumConfig(**data)
        if config.tracking:  # its models load only for a file that has the table
            from cosmic_curriculum.workspace.tracking_config import check_tracking

            check_tracking(config.tracking)
    except ValidationError as exc:
        raise ConfigError(describe(path, text, exc)) from None
    except TypeError as exc:  # e.g. a table where a value was expected at the top level
        raise ConfigError(f"{path}: {exc}") from None
    return config.model_copy(update={"path": path})
