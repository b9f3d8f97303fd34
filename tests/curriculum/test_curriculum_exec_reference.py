"""``reference_bot = {exec = [...]}``: validated with the config, checked in preflight,
played by the built-in evaluator, stopped afterwards."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from fakes.workspace import fake_env, make_workspace, read_state, trainer_runs
from fakes.workspace import run_in_process as run

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.workspace.config import ExecReference
from cosmic_curriculum.workspace.config_file import load_config

REPO = Path(__file__).resolve().parents[2]
FAKE_BOT = REPO / "tests" / "fakes" / "fake_bot.py"
ONE_STAGE = '[[stages]]\nname = "a"\n'


def config_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "stages.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "\n" not in str(info.value) and info.value.exit_code == 2
    return str(info.value)


def test_exec_references_are_argv_lists_top_level_and_per_stage(tmp_path: Path) -> None:
    path = tmp_path / "stages.toml"
    path.write_text(
        'reference_bot = {exec = ["./mybot", "--level", "3"], timeout = 2}\n'
        + ONE_STAGE
        + '[[stages]]\nname = "b"\nreference_bot = {exec = ["bot"]}\n'
    )
    config = load_config(path)
    first, second = config.stage_reference(0), config.stage_reference(1)
    assert isinstance(first, ExecReference) and first.exec == ["./mybot", "--level", "3"]
    assert first.timeout == 2.0
    assert isinstance(second, ExecReference) and second.timeout == 10.0
    assert config.stage_definitions()[0]["reference_bot"] == {"exec": ["./mybot", "--level", "3"]}
    # A path stays a plain string in the definitions (existing config hashes are kept).
    path.write_text('reference_bot = "bots/rookie.json"\n' + ONE_STAGE)
    assert load_config(path).stage_definitions()[0]["reference_bot"] == "bots/rookie.json"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            'reference_bot = {exec = "./mybot --level 3"}\n' + ONE_STAGE,
            ["stages.toml:1:", "reference_bot.exec:", "argv list", "never a shell string"],
        ),
        ("reference_bot = {exec = []}\n" + ONE_STAGE, ["stages.toml:1:", "at least 1 item"]),
        (
            'reference_bot = {exec = ["./b"], timout = 3}\n' + ONE_STAGE,
            ["stages.toml:1:", "unknown key 'timout'"],
        ),
        (
            'reference_bot = {exec = ["./b"], timeout = 0}\n' + ONE_STAGE,
            ["stages.toml:1:", "reference_bot.timeout:", "greater than 0"],
        ),
        ('reference_bot = {exec = [""]}\n' + ONE_STAGE, ["program (first element) is empty"]),
        ('reference_bot = {exec = ["./b\\u0000"]}\n' + ONE_STAGE, ["NUL"]),
        ("reference_bot = 3\n" + ONE_STAGE, ["stages.toml:1:", "a bot file's path or"]),
        (
            ONE_STAGE + 'reference_bot = {exec = ["./b"], shell = true}\n',
            ["stages.toml:3:", "stages[0].reference_bot.shell:", "unknown key 'shell'"],
        ),
    ],
)
def test_bad_exec_references_get_line_numbered_errors(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    message = config_error(tmp_path, text)
    for fragment in fragments:
        assert fragment in message, message


def exec_workspace(tmp_path: Path, mode: str) -> Path:
    """One stage, the built-in evaluator, the real rookie as the trained bot, and the fake
    program bot (run from the workspace by a relative path) as the reference."""
    rookie = REPO / "bots" / "rookie.json"
    ws = make_workspace(
        tmp_path / "ws",
        git_repo=False,
        stages=["score"],
        max_retries=0,
        external_eval=False,
        trainer_script={"*": {"bot_source": str(rookie)}},
    )
    shutil.copy(FAKE_BOT, ws / "fake_bot.py")
    toml = (ws / "stages.toml").read_text()
    argv = json.dumps([sys.executable, "fake_bot.py", mode, "pids.txt"])
    toml = toml.replace(
        'reference_bot = "bots/rookie.json"', f"reference_bot = {{exec = {argv}, timeout = 2}}"
    )
    (ws / "stages.toml").write_text(toml)
    return ws


def all_gone(pidfile: Path) -> bool:
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not any(runner.group_members(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_a_curriculum_evaluates_against_an_exec_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = exec_workspace(tmp_path, "ok")
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    state = run(ws)
    assert state.status == "done"
    record = json.loads((ws / "eval_history.json").read_text())[0]
    label = f"exec:{sys.executable} fake_bot.py ok pids.txt"
    assert record["reference"] == label and record["reference_decision_ticks"] == 16
    assert record["wins_a"] > record["wins_b"]  # the rookie beats a program that idles
    assert read_state(ws)["log"][0]["decision"] == "pass"
    assert all_gone(ws / "pids.txt")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["silent", "protocol"])
def test_preflight_refuses_a_broken_exec_reference_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    ws = exec_workspace(tmp_path, mode)
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as info:
        run(ws)
    message = str(info.value)
    assert "\n" not in message
    assert "stages.toml: reference_bot of stage 1 failed its handshake: bot exec:" in message
    assert trainer_runs(ws) == []  # refused before any training
    assert all_gone(ws / "pids.txt")


@pytest.mark.slow
def test_a_reference_fixed_in_stages_toml_reaches_the_attempt_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference's argv breaks at evaluation; the user fixes it in stages.toml. The
    attempt (trained, not evaluated) now plays the fixed program (it used to play the
    recorded broken argv on every rerun), and the state says which it started with."""
    from fakes.workspace import warnings_reporter

    from cosmic_curriculum.errors import CurriculumError

    ws = exec_workspace(tmp_path, "exit")
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(CurriculumError):
        run(ws)  # the handshake passed; the program dies in the evaluation's games
    flight = read_state(ws)["in_flight"]
    assert flight["phase"] == "trained" and flight["error"]
    broken, fixed = (f"exec:{sys.executable} fake_bot.py {m} pids.txt" for m in ("exit", "ok"))
    assert flight["reference"] == broken
    toml = ws / "stages.toml"
    toml.write_text(toml.read_text().replace('"exit"', '"ok"'))
    reporter = warnings_reporter()
    state = run(ws, reporter)
    assert state.status == "done"
    assert [r["reference"] for r in json.loads((ws / "eval_history.json").read_text())] == [fixed]
    assert any("its evaluation plays the one configured now" in w for w in reporter.warnings)
    assert [r["experiment"] for r in trainer_runs(ws) if r["event"] == "start"] == [
        "curric-s1-score"
    ]  # trained once
    decided = read_state(ws)["in_flight"]
    assert (decided["reference"], decided["reference_was"]) == (fixed, broken)
