"""Every timeout and wait a user sets is a finite number of seconds in its range: the
one table (``defaults.TIMEOUT_RANGES``), then each way in (stages.toml keys, the CLI's
options, publish's option, the git variable) refusing inf, nan and 1e308 in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.workspace import make_workspace

from cosmic_curriculum.defaults import GIT_TIMEOUT_SECONDS, TIMEOUT_RANGES, seconds_problem
from cosmic_curriculum.vcs.gitcmd import TIMEOUT_ENV, git_timeout

REPO = Path(__file__).resolve().parent.parent
HUGE = ("inf", "1e308", "nan", "-inf")


@pytest.mark.parametrize(
    ("kind", "value", "ok"),
    [
        ("notify", 30.0, True),
        ("notify", 3600.0, True),
        ("notify", 3600.5, False),
        ("notify", 0.0, False),  # "greater than 0"
        ("notify", 1e-3, True),
        ("bot", float("inf"), False),
        ("bot", 1e308, False),
        ("bot", float("nan"), False),
        ("bot", -1.0, False),
        ("attempt", 1.0, True),  # "at least 1"
        ("attempt", 0.5, False),
        ("attempt", 30 * 24 * 3600.0, True),
        ("attempt", 1e12, False),
        ("lock_wait", 0.0, True),
        ("interval", 0.05, False),
        ("git", float("inf"), False),
        ("push", 30.0, True),
    ],
)
def test_each_range_takes_only_finite_seconds_within_it(kind: str, value: float, ok: bool) -> None:
    assert (seconds_problem(value, kind) is None) == ok


def test_every_range_is_finite_and_the_message_names_setting_value_and_range() -> None:
    for least, most, _ in TIMEOUT_RANGES.values():
        assert 0 <= least < most < 1e9
    assert seconds_problem(float("inf"), "bot") == (
        "must be a finite number of seconds greater than 0 and at most 3600 (got inf)"
    )


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    for fragment in fragments:
        assert fragment in line, line


@pytest.mark.parametrize("value", HUGE[:2])
@pytest.mark.parametrize(
    "command",
    [
        ["evaluate", "bots/rookie.json", "bots/inert.json", "-n", "2", "--bot-timeout"],
        ["replay", "bots/rookie.json", "bots/inert.json", "--bot-timeout"],
        ["ladder", "--bot", "bots/rookie.json", "--bot", "bots/inert.json", "--lock-wait"],
        ["evaluate", "bots/rookie.json", "bots/inert.json", "-n", "2", "--lock-wait"],
        ["report", "--lock-wait"],
        ["run", "--attempt-timeout"],
        ["status", "--interval"],
    ],
    ids=lambda c: " ".join(c[:1] + c[-1:]) if isinstance(c, list) else c,
)
def test_a_timeout_option_out_of_range_is_one_line(
    tmp_path: Path, command: list[str], value: str
) -> None:
    # In a throwaway workspace: were the option taken, nothing of the repository is touched.
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    for name in ("rookie.json", "inert.json"):
        shutil.copy(REPO / "bots" / name, ws / "bots" / name)
    result = cli(*command, value, cwd=ws)
    assert_one_line(result, command[-1], "finite number of seconds", f"got {float(value):g}")


@pytest.mark.parametrize(
    "line",
    [
        "notify_timeout = inf",
        "notify_timeout = 1e308",
        "notify_timeout = nan",
        'reference_bot = {exec = ["./b"], timeout = inf}',
        'reference_bot = {exec = ["./b"], timeout = 1e308}',
    ],
)
def test_a_timeout_key_out_of_range_is_one_line_from_run(tmp_path: Path, line: str) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    toml = ws / "stages.toml"
    rest = toml.read_text().replace('reference_bot = "bots/rookie.json"\n', "")
    toml.write_text(line + "\n" + rest)
    result = cli("run", "--workspace", str(ws), "--no-push", cwd=tmp_path)
    key = "notify_timeout" if line.startswith("notify") else "reference_bot.timeout"
    assert_one_line(result, "stages.toml:1:", key, "finite number of seconds", "at most 3600")
    assert not (ws / "fake_runs.jsonl").exists()


@pytest.mark.parametrize(
    ("table", "key"),
    [("launcher", "request_timeout"), ("tracking", "timeout")],
)
@pytest.mark.parametrize("value", ["inf", "1e308", "nan"])
def test_a_timeout_in_a_table_out_of_range_is_one_line_from_run(
    tmp_path: Path, table: str, key: str, value: str
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    toml = ws / "stages.toml"
    assert f"[{table}]" not in toml.read_text()
    toml.write_text(toml.read_text() + f"\n[{table}]\n{key} = {value}\n")
    result = cli("run", "--workspace", str(ws), "--no-push", cwd=tmp_path)
    assert_one_line(result, "stages.toml", key, "finite number of seconds", "at most 3600")
    assert not (ws / "fake_runs.jsonl").exists()


def test_publish_refuses_an_endless_push_timeout(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum.train.publish", "x", "--push-timeout", "inf"],
        env=env,
        cwd=tmp_path,  # not a repository: were the option taken, nothing is committed
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_line(result, "--push-timeout", "got inf")


@pytest.mark.parametrize("raw", [*HUGE, "0", "-5"])
def test_the_git_timeout_variable_out_of_range_falls_back_to_the_default(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, raw)
    assert git_timeout() == GIT_TIMEOUT_SECONDS


def test_the_ranges_are_in_the_defaults_table() -> None:
    # One table: no module keeps its own bound of a timeout.
    assert json.loads(json.dumps(sorted(TIMEOUT_RANGES))) == sorted(
        ["notify", "bot", "attempt", "push", "git", "lock_wait", "interval", "ray", "tracking"]
    )
