"""An arm's sub-workspace on real files: made complete (inputs copied, the parent's runs
not), its own git repository, kept out of the parent's, and refused once the parent's
stages.toml derives something else."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cosmic_curriculum.compare.workspaces import compare_root, prepare
from cosmic_curriculum.errors import CompareError


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in {
        "stages.toml": "parent's\n",
        "curriculum_state.json": "{}",
        "eval_history.json": "[]",
        "bots/rookie.json": "{}",
        "bots/curric-s1-a.json": "{}",
        "scripts/train.sh": "#!/bin/sh\n",
        "logs/curric-s1-a.log": "log\n",
        "checkpoints/curric-s1-a/final.zip": "zip",
        "envs.py": "X = 1\n",
    }.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def _files(root: Path) -> set[str]:
    return {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
    }


def test_an_arm_gets_the_inputs_and_none_of_the_parents_runs(parent: Path) -> None:
    root = compare_root(parent, "compare")
    sub = prepare(parent, root, "curriculum-s0", "arm's\n")
    assert _files(sub) == {"stages.toml", "bots/rookie.json", "scripts/train.sh", "envs.py"}
    assert (sub / "stages.toml").read_text() == "arm's\n"
    assert not list(root.glob(".building-*"))
    if shutil.which("git"):
        assert (sub / ".git").is_dir()
        subprocess.run(["git", "init", "-q"], cwd=parent, check=True)
        shown = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "compare"],
            cwd=parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert "compare/curriculum-s0/stages.toml" not in shown  # the arm is not the parent's
        assert "compare/.gitignore" in shown


def test_a_later_compare_keeps_the_arm_or_refuses_a_changed_one(parent: Path) -> None:
    root = compare_root(parent, "compare")
    sub = prepare(parent, root, "last-stage-s1", "arm's\n")
    (sub / "curriculum_state.json").write_text('{"status": "done"}')
    assert prepare(parent, root, "last-stage-s1", "arm's\n") == sub
    assert (sub / "curriculum_state.json").read_text() == '{"status": "done"}'
    with pytest.raises(CompareError) as info:
        prepare(parent, root, "last-stage-s1", "changed\n")
    message = str(info.value)
    assert "\n" not in message and "stages.toml changed since the arm started" in message
    assert f"remove {sub}" in message


def test_a_half_built_arm_is_built_again(parent: Path) -> None:
    root = compare_root(parent, "compare")
    half = root / ".building-curriculum-s2"
    half.mkdir()
    (half / "junk").write_text("from a kill mid-build")
    sub = prepare(parent, root, "curriculum-s2", "arm's\n")
    assert not half.exists() and not (sub / "junk").exists()
