"""Security: no shell with config or CLI input, paths stay in the workspace, checkpoints
(pickle inside) load only from the workspace's checkpoints/, bots are JSON only.

Stage flags containing `;`, `$()` and spaces reaching the trainer verbatim in-process:
tests/test_orchestrator.py::test_flags_travel_as_argv_never_through_a_shell.
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.workspace import cli_env, make_workspace, run_cli, trainer_runs

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config_file import load_config

PACKAGE = Path(__file__).resolve().parent.parent / "cosmic_curriculum"
TRAIN = [sys.executable, "-m", "cosmic_curriculum", "train"]
NASTY = ["a; touch pwned1", "$(touch pwned2)", "`touch pwned3`", "two words", "end;", "&&", "|"]


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return f"{_name(func.value)}.{func.attr}"
    if isinstance(func, ast.Name):
        return func.id
    return "?"


def test_no_shell_anywhere_in_the_package() -> None:
    """No shell=True, os.system, os.popen or a string command for subprocess."""
    offenders: list[str] = []
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 10
    for path in sources:
        tree = ast.parse(path.read_text(), str(path))
        for call in _calls(tree):
            name = _name(call.func)
            where = f"{path.relative_to(PACKAGE.parent)}:{call.lineno} {name}"
            if name in ("os.system", "os.popen", "os.execl", "os.spawnl"):
                offenders.append(where)
            for kw in call.keywords:
                if kw.arg == "shell" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False
                ):
                    offenders.append(f"{where} shell=")
            if name.startswith("subprocess.") and call.args:
                first = call.args[0]
                if isinstance(first, ast.Constant | ast.JoinedStr | ast.BinOp):
                    offenders.append(f"{where} with a string command")
    assert offenders == []


@pytest.mark.slow
def test_nasty_flags_reach_the_trainer_verbatim_through_the_cli(tmp_path: Path) -> None:
    """Standing args, stage flags, --reason and a workspace path full of shell syntax."""
    ws = make_workspace(tmp_path / "ws; $(touch pwned0) x", stages=["score"])
    text = (ws / "stages.toml").read_text()
    text = text.replace(
        'standing_args = ["--reset-std", "0.3", "--ent-coef", "0.001"]',
        f"standing_args = {json.dumps(NASTY)}",
    ).replace('flags = ["--stage-flag", "score"]', f"flags = {json.dumps(NASTY[::-1])}")
    (ws / "stages.toml").write_text(text)
    result = run_cli(ws, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    argv = next(r for r in trainer_runs(ws) if r["event"] == "start")["argv"]
    assert argv[7:] == NASTY + NASTY[::-1]
    assert not [p for p in tmp_path.rglob("pwned*")]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_detached_run_keeps_every_argument_literal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tmux splits its argv at arguments ending in ';': they must stay one argument."""
    from cosmic_curriculum.launchers.tmux import TMUX_SOCKET_ENV, start_detached

    socket = f"cc-sec-{os.getpid()}-{secrets.token_hex(3)}"
    monkeypatch.setenv(TMUX_SOCKET_ENV, socket)
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    out = tmp_path / "argv.txt"
    script = f'printf "%s\\n" "$@" > {out}'
    try:
        start_detached(ws, ["/bin/sh", "-c", script, "sh", *NASTY, "x\\;", ";"])
        deadline = time.monotonic() + 10
        while not out.exists() or not out.read_text().endswith(";\n"):
            assert time.monotonic() < deadline, "the detached command did not run"
            time.sleep(0.05)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        sockets = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (sockets / socket).unlink(missing_ok=True)
    assert out.read_text().splitlines() == [*NASTY, "x\\;", ";"]
    assert not list(tmp_path.rglob("pwned*"))


@pytest.mark.parametrize(
    "name", ["../up", "a/b", "..", ".", "/abs", "a\\b", "A", "a b", "~home", "a..b", ""]
)
def test_stage_names_that_could_leave_the_workspace_are_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "stages.toml"
    path.write_text(f"[[stages]]\nname = {json.dumps(name)}\n")
    with pytest.raises(ConfigError, match=r"stages\[0\]\.name"):
        load_config(path)


def test_every_path_derived_from_names_is_inside_the_workspace(tmp_path: Path) -> None:
    from cosmic_curriculum.workspace.layout import Layout, experiment_name

    ws = make_workspace(tmp_path / "ws", stages=["score", "x-y_9", "0"], git_repo=False)
    paths = Layout(ws.resolve())
    config = load_config(ws / "stages.toml")
    root = ws.resolve()
    for i, stage in enumerate(config.stages):
        for attempt in (0, 1, 12):
            exp = experiment_name(i, stage.name, attempt)
            for path in (paths.bot(exp), paths.log(exp), paths.checkpoint_dir(exp)):
                assert path.resolve().is_relative_to(root), path
        review = paths.review(stage.name)
        assert review.resolve().is_relative_to(root)


@pytest.mark.slow
def test_train_refuses_a_checkpoint_outside_the_workspace(tmp_path: Path) -> None:
    """Black box: `train --resume /tmp/x.zip` must not unpickle a foreign file."""
    marker = tmp_path / "unpickled"
    foreign = tmp_path / "x.zip"
    # Were it ever unpickled, this payload would create the marker file.
    foreign.write_bytes(pickle.dumps(_Payload(str(marker))))
    ws = tmp_path / "ws"
    ws.mkdir()
    for resume in (str(foreign), "../x.zip"):
        result = subprocess.run(
            [*TRAIN, "exp", "--resume", resume, "--timesteps", "64"],
            cwd=ws,
            env=cli_env(ws) | {"COSMIC_CURRICULUM_NO_GIT": "1"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --resume")
        assert "outside" in lines[0] and "checkpoints" in lines[0]
    assert not marker.exists()


class _Payload:
    """Unpickling this runs `open(path, "w")` (what a hostile checkpoint could do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


@pytest.mark.parametrize("suffix", [".json", ".zip", ".pkl"])
def test_bots_are_json_only_never_unpickled(tmp_path: Path, suffix: str) -> None:
    from cosmic_curriculum.bots import bot_from_spec, load_bot
    from cosmic_curriculum.errors import BotError

    marker = tmp_path / "unpickled"
    bot = tmp_path / f"bot{suffix}"
    bot.write_bytes(pickle.dumps(_Payload(str(marker))))
    with pytest.raises(BotError, match=str(bot.name)):
        load_bot(bot)
    with pytest.raises(BotError):
        bot_from_spec(f"bot:{bot}")
    assert not marker.exists()


def test_a_pickled_reference_bot_is_refused_by_run(tmp_path: Path) -> None:
    repo_rookie = PACKAGE.parent / "bots" / "rookie.json"
    assert repo_rookie.is_file(), f"{repo_rookie}: missing; the rookie bot is committed in bots/"
    marker = tmp_path / "unpickled"
    ws = make_workspace(tmp_path / "ws", stages=["score"], external_eval=False)
    (ws / "bots" / "rookie.json").write_bytes(pickle.dumps(_Payload(str(marker))))
    result = run_cli(ws)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "bots/rookie.json" in lines[0]
    assert not marker.exists() and trainer_runs(ws) == []
