"""stages.toml written to a temp dir and the one-line error its loading must give."""

from __future__ import annotations

from pathlib import Path

import pytest

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config_file import load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stages.toml"
    path.write_text(text)
    return path


def error_for(tmp_path: Path, text: str) -> str:
    """The error of loading ``text``: one line naming stages.toml, exit code 2."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    msg = str(info.value)
    assert "\n" not in msg and "stages.toml" in msg
    assert info.value.exit_code == 2
    return msg
