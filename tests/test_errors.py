"""errors.py: a damaged file's advice is a command that restores it, run as shown, in a
real git repository: a file at the root and one in a folder, named relative or absolute,
from the workspace and from elsewhere (a folder name with a space included)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cosmic_curriculum.errors import DamagedFileError
from tests.gitutil import init_repo


@pytest.mark.parametrize("relative", ["curriculum_state.json", "bots/curric-s1-a.json"])
@pytest.mark.parametrize("from_workspace", [True, False])
@pytest.mark.parametrize("absolute", [False, True])
def test_a_damaged_files_advice_restores_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    relative: str,
    from_workspace: bool,
    absolute: bool,
) -> None:
    ws, elsewhere = tmp_path / "my ws", tmp_path / "elsewhere"
    file = ws / relative
    file.parent.mkdir(parents=True, exist_ok=True)
    elsewhere.mkdir()
    file.write_text('{"good": true}\n')
    init_repo(ws)
    file.write_text('{"good": tr')  # a write cut short
    cwd = ws if from_workspace else elsewhere
    monkeypatch.chdir(cwd)
    named = file if absolute or not from_workspace else Path(relative)
    message = str(DamagedFileError(named, "is not valid JSON"))
    found = re.search(r"restore the last good copy with `([^`]+)`$", message)
    assert found is not None, message
    subprocess.run(found.group(1), shell=True, cwd=cwd, check=True, capture_output=True)
    assert file.read_text() == '{"good": true}\n'
    if from_workspace:  # the short form, from the repository's root
        assert found.group(1).startswith(f"git show HEAD:{relative} > ")
