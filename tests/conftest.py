"""Shared fixtures: temp workspaces, git repos with an identity, the repo root."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitutil import init_repo

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def status_cache_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test's own cache directory (`status` caches there): none in the user's home,
    and no test sees another's cached status. SB3's own logger (a test's model.learn)
    writes in the test's temp dir too, not in a new folder of the machine's /tmp."""
    home = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))
    return home


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A repository with an identity and one commit (a README.md)."""
    return init_repo(tmp_path / "repo")
