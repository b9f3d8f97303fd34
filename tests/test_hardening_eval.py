"""Hardening of `evaluate`, `replay`, `ladder`, `status` and `gate simulate` against a
careless or hostile user: workspace locking, bounded memory and output, output paths,
files the JSON reader refuses, and byte order marks. Each test failed before its fix."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import load_bot, save_bot, simple_bot_document
from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import BotError, ConfigError, StateError
from cosmic_curriculum.evaluation import evaluate
from cosmic_curriculum.system import fsio, output_files
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.layout import LOCK_FILE, STATE_FILE
from cosmic_curriculum.workspace.lock import WorkspaceLock

ROOT = Path(__file__).resolve().parent.parent
# One physics tick per game: enough to exercise batching, memory and files in no time.
TINY = GameSettings(tick=0.1, decision_ticks=1, time_limit=0.1)
runner = CliRunner()


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(),
    )


def one_line_error(output: str, *needles: str) -> str:
    text = output.strip()
    assert "Traceback" not in text and text.startswith("error: ") and "\n" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)
    return text


@pytest.fixture
def bots(tmp_path: Path) -> dict[str, Path]:
    paths = {"inert": tmp_path / "inert.json", "random": tmp_path / "random.json"}
    save_bot(paths["inert"], simple_bot_document("inert", decision_ticks=1, game=TINY))
    save_bot(paths["random"], simple_bot_document("random", decision_ticks=1, game=TINY))
    return paths


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose lock another process holds (like a `run` in progress)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    code = (
        "import sys, time; from cosmic_curriculum.workspace.lock import WorkspaceLock; "
        "WorkspaceLock(sys.argv[1]).acquire(); print('ready', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(ws)], stdout=subprocess.PIPE, text=True, env=env()
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    yield ws
    holder.kill()
    holder.wait()


# --- 1. the workspace lock and stale temps ----------------------------------------------------


def test_evaluate_takes_the_workspace_lock_of_its_history(
    bots: dict[str, Path], held: Path
) -> None:
    hist = held / "eval_history.json"
    history.append_record(hist, {"wins_a": 1, "wins_b": 0, "draws": 1, "episodes": 2})
    before = hist.read_bytes()
    started = time.monotonic()
    args = ["evaluate", str(bots["inert"]), str(bots["random"]), "-n", "2"]
    result = runner.invoke(app, [*args, "--history", str(hist), "--lock-wait", "0.3"])
    assert result.exit_code == 1
    one_line_error(result.output, str(held), "holds this workspace", "within 0.3s")
    assert time.monotonic() - started < 10
    assert hist.read_bytes() == before  # nothing appended behind the holder's back


def test_evaluate_started_by_the_lock_holder_inherits_its_lock(
    bots: dict[str, Path], tmp_path: Path
) -> None:
    """`run` passes its lock to an evaluation_command, which may be `evaluate` itself."""
    lock = WorkspaceLock(tmp_path).acquire()
    try:
        hist = tmp_path / "eval_history.json"
        argv = [sys.executable, "-m", "cosmic_curriculum", "evaluate", str(bots["inert"])]
        argv += [str(bots["random"]), "-n", "2", "--history", str(hist), "--lock-wait", "0"]
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env(), pass_fds=(lock.fd,), timeout=60
        )
    finally:
        lock.release()
    assert done.returncode == 0, done.stderr
    assert len(history.load(hist)) == 1


def test_ladder_in_a_workspace_takes_its_lock_and_outside_leaves_no_lock_file(
    bots: dict[str, Path], held: Path, tmp_path: Path
) -> None:
    (held / STATE_FILE).write_text("{}")
    bots_dir = bots["inert"].parent
    args = ["ladder", "--bots-dir", str(bots_dir), "--pairs", "1", "--lock-wait", "0.2"]
    result = runner.invoke(app, [*args, "--out-dir", str(held / "logs")])
    assert result.exit_code == 1
    one_line_error(result.output, "holds this workspace")
    assert not (held / "logs").exists()
    elsewhere = tmp_path / "out"
    result = runner.invoke(app, [*args, "--out-dir", str(elsewhere)])
    assert result.exit_code == 0, result.output
    assert (elsewhere / "ladder.json").exists() and not (elsewhere / LOCK_FILE).exists()


def test_stale_temp_cleanup_keeps_the_temp_of_a_live_writer(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        temp = tmp_path / f".eval_history.json{fsio.TEMP_MARKER}{writer.pid}-0a1b2c3d"
        temp.write_text("[")
        assert fsio.clean_stale_temps(tmp_path) == []
        assert temp.exists()
    finally:
        writer.kill()
        writer.wait()
    assert fsio.clean_stale_temps(tmp_path) == [temp]  # its writer is gone: stale


def test_a_pid_reused_after_the_temp_was_written_does_not_keep_it(tmp_path: Path) -> None:
    temp = tmp_path / f".x.json{fsio.TEMP_MARKER}{os.getpid()}-00"
    temp.write_text("[")
    os.utime(temp, (time.time() - 3600, time.time() - 3600))  # older than this process
    assert fsio.clean_stale_temps(tmp_path) == [temp]


# --- 2. memory stays bounded whatever the episode count ---------------------------------------

# Peak RSS from VmHWM: ru_maxrss would carry over the (large) RSS of the pytest parent.
MEASURE = """
import json, sys
from pathlib import Path
from cosmic_curriculum.evaluation import evaluate
a, b, h, n = sys.argv[1:]
rec = evaluate.run_evaluation(Path(a), Path(b), history_path=Path(h), episodes=int(n), seed=1)
status = Path("/proc/self/status").read_text().splitlines()
peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps({"peak_mb": peak, "episodes": rec["episodes"], "batches": rec["batches"],
                  "listed": "pairs" in rec, "pair_counts": rec.get("pair_counts")}))
"""


@pytest.mark.slow
def test_a_huge_episode_count_plays_in_batches_with_bounded_memory(
    bots: dict[str, Path], tmp_path: Path
) -> None:
    episodes = 400_000  # one batch of 200,000 pairs took about 800 MB
    hist = tmp_path / "h.json"
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *map(str, (bots["inert"], bots["random"], hist, episodes))],
        capture_output=True,
        text=True,
        env=env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["episodes"] == episodes and out["peak_mb"] < 300, out
    assert out["batches"] == -(-episodes // 2 // evaluate.MAX_BATCH_PAIRS)
    # Too many pairs to list: the record keeps their histogram, which sums to them.
    assert not out["listed"] and sum(out["pair_counts"]) == episodes // 2
    assert hist.stat().st_size < 100_000


def test_batched_evaluations_are_deterministic_and_small_ones_unchanged(
    bots: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hist = tmp_path / "h.json"

    def run(episodes: int) -> dict:
        rec = evaluate.run_evaluation(
            bots["random"], bots["random"], history_path=hist, episodes=episodes, seed=4
        )
        return {k: v for k, v in rec.items() if k not in ("id", "created_at", "seconds")}

    whole = run(20)  # 10 pairs: one batch, as before
    monkeypatch.setattr(evaluate, "MAX_BATCH_PAIRS", 4)
    split = run(20)
    assert split["batches"] == 3 and split["batch_pairs"] == 4 and whole["batches"] == 1
    assert split == run(20)  # the same seed gives the same batches
    assert split["pairs"][:4] == run(8)["pairs"]  # batch 0 is seed (4, 0), as in one batch


# --- 3. output paths ------------------------------------------------------------------------


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "dir.png").mkdir()
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "file").write_text("x")
    return {"tmp": tmp_path}


@pytest.mark.parametrize(
    ("command", "option", "target", "needle"),
    [
        ("replay", "--out", "missing/x.png", "does not exist"),
        ("replay", "--out", "dir.png", "is a directory"),
        ("replay", "--out", "file/x.png", "is not a directory"),
        ("ladder", "--out-dir", "file", "is a file"),
        ("ladder", "--out-dir", "missing/deeper", "does not exist"),
        ("ladder", "--out-dir", "ladder-dir", "is a directory"),
        ("gate", "--json", "dir.json", "is a directory"),
        ("gate", "--json", "missing/rows.json", "does not exist"),
        ("evaluate", "--history", "dir.json", "is a directory"),
        ("evaluate", "--history", "missing/h.json", "does not exist"),
    ],
)
def test_bad_output_paths_are_one_line_errors(
    bots: dict[str, Path],
    places: dict[str, Path],
    command: str,
    option: str,
    target: str,
    needle: str,
) -> None:
    tmp = places["tmp"]
    if target == "ladder-dir":
        (tmp / "out" / "ladder.json").mkdir(parents=True)  # a directory where a file goes
        target = "out"
    path = str(tmp / target)
    a, b = str(bots["inert"]), str(bots["random"])
    argv = {
        "replay": ["replay", a, b],
        "ladder": ["ladder", "--bots-dir", str(bots["inert"].parent), "--pairs", "1"],
        "gate": ["gate", "simulate", "--trials", "10"],
        "evaluate": ["evaluate", a, b, "-n", "2"],
    }[command]
    result = runner.invoke(app, [*argv, option, path])
    assert result.exit_code == 2, result.output
    one_line_error(result.output, option, path, needle)


def test_an_unwritable_output_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real(p, mode))
    for check, target in (
        (output_files.check_output_file, locked / "x.png"),
        (output_files.check_output_dir, locked),
    ):
        with pytest.raises(ConfigError, match="not writable") as info:
            check(target, "--out")
        assert info.value.exit_code == 2


# --- 4 and 7. files the JSON reader refuses, byte order marks -----------------------------

BAD_FILES: dict[str, bytes] = {
    "bad-json": b'{"format": ',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge-int": b'{"a": ' + b"9" * 5000 + b"}",
    "huge-float": b'{"a": 1e400}',
    "nan": b'{"a": NaN}',
    "latin-1": b'{"a": "\xe9"}',
    "bom": b'\xef\xbb\xbf{"a": 1}',
}


def bad_file(directory: Path, kind: str, name: str) -> Path:
    path = directory / name
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(BAD_FILES[kind])
    return path


@pytest.mark.parametrize("kind", [*BAD_FILES, "fifo"])
def test_evaluate_refuses_a_bad_history_in_one_line_before_playing(
    bots: dict[str, Path], tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cosmic_curriculum.arena import match

    hist = bad_file(tmp_path, kind, "h.json")
    before = hist.read_bytes() if kind != "fifo" else b""
    played: list[int] = []
    monkeypatch.setattr(match, "play_pairs", lambda *a, **k: played.append(1))
    args = ["evaluate", str(bots["inert"]), str(bots["random"]), "-n", "2"]
    result = runner.invoke(app, [*args, "--history", str(hist)])
    assert result.exit_code == 1, result.output
    one_line_error(result.output, str(hist))
    assert played == []  # refused before a single game
    assert kind == "fifo" or hist.read_bytes() == before


@pytest.mark.parametrize("kind", [*BAD_FILES, "directory"])
def test_evaluate_and_replay_refuse_a_bad_bot_in_one_line(
    bots: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    bot = bad_file(tmp_path, kind, "bad.json")
    for argv in (
        ["evaluate", str(bot), str(bots["inert"]), "--history", str(tmp_path / "h.json")],
        ["replay", str(bots["inert"]), str(bot), "--out", str(tmp_path / "r.png")],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 1, result.output
        one_line_error(result.output, str(bot))
    assert not (tmp_path / "h.json").exists() and not (tmp_path / "r.png").exists()


def test_a_bom_is_named_with_its_fix_in_bots_and_histories(tmp_path: Path) -> None:
    bom = bad_file(tmp_path, "bom", "bom.json")
    fix = re.escape("byte order mark (BOM); save it as UTF-8 without a BOM")
    with pytest.raises(BotError, match=fix):
        load_bot(bom)
    with pytest.raises(StateError, match=fix):
        history.load(bom)


def test_a_fifo_or_device_named_like_a_bot_is_refused_not_read_forever(tmp_path: Path) -> None:
    fifo = bad_file(tmp_path, "fifo", "fifo.json")
    code = "import sys; from cosmic_curriculum.bots import load_bot; load_bot(sys.argv[1])"
    for path in (fifo, Path("/dev/zero")):
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            env=env(),
            timeout=30,
        )
        assert "not a regular file" in done.stderr.splitlines()[-1]
    with pytest.raises(StateError, match="not a regular file"):
        fsio.read_json(fifo, "evaluation history")


def test_a_ladder_skips_every_kind_of_bad_bot_file_with_its_reason(
    bots: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bots_dir = bots["inert"].parent
    kinds = [*BAD_FILES, "directory", "fifo"]
    for kind in kinds:
        bad_file(bots_dir, kind, f"zz-{kind}.json")
    unreadable = bots_dir / "zz-unreadable.json"
    unreadable.write_text("{}")
    real = fsio.read_text_file

    def deny(path: Path) -> str:  # chmod 000 does not stop root: refuse it here
        if Path(path) == unreadable:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(fsio, "read_text_file", deny)
    out = tmp_path / "ladder"
    result = runner.invoke(
        app, ["ladder", "--bots-dir", str(bots_dir), "--pairs", "1", "--out-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "ladder.json").read_text())
    assert doc["bots"] == ["inert", "random"]
    skipped = {Path(s["path"]).stem: s["reason"] for s in doc["skipped"]}
    assert sorted(skipped) == sorted([f"zz-{k}" for k in kinds] + ["zz-unreadable"])
    assert "Permission denied" in skipped["zz-unreadable"]
    assert "BOM" in skipped["zz-bom"] and "not a regular file" in skipped["zz-fifo"]
    for reason in skipped.values():
        assert "\n" not in reason and reason in result.output


# --- 5. status stays bounded; a broken config is a non-zero exit ------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    from fakes.workspace import make_workspace

    return make_workspace(tmp_path / "ws", git_repo=False)


def put_stage_index(ws: Path, index: int) -> None:
    state = json.loads((ws / STATE_FILE).read_text())
    (ws / STATE_FILE).write_text(json.dumps({**state, "stage_index": index}))


@pytest.mark.parametrize("index", [1000, 100_000_000])
def test_status_of_a_state_far_past_the_stages_is_fast_bounded_and_says_so(
    ws: Path, index: int
) -> None:
    from cosmic_curriculum.status import facts as report

    put_stage_index(ws, index)
    started = time.monotonic()
    data = report.status_data(ws)
    assert time.monotonic() - started < 5
    assert f"stage_index {index} is out of range for the 3 stage(s)" in data["config_error"]
    assert len(data["stages"]) <= 20 and data["stages"][-1]["index"] == index
    assert len(data["stages"]) == 3 + report.MAX_UNCONFIGURED_ROWS + 1  # the state's stage last
    assert data["stages_not_shown"] == index + 1 - len(data["stages"])
    result = runner.invoke(app, ["status", "--workspace", str(ws)])
    assert result.exit_code == 0 and "not shown" in result.output
    assert len(result.output.splitlines()) < 40


@pytest.mark.parametrize("config", ["missing", "broken"])
def test_status_with_a_missing_or_broken_config_shows_the_state_and_exits_2(
    ws: Path, config: str
) -> None:
    if config == "missing":
        (ws / "stages.toml").unlink()
    else:
        (ws / "stages.toml").write_text("max_retries = 'many'\n")
    put_stage_index(ws, 1000)
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["status", "--workspace", str(ws), *extra])
        assert result.exit_code == 2, result.output
        assert "stages.toml" in result.output and "Traceback" not in result.output
        assert len(result.output.splitlines()) < 60 if not extra else True
    data = json.loads(runner.invoke(app, ["status", "--workspace", str(ws), "--json"]).output)
    assert data["config_loaded"] is False and data["next"].startswith("fix the config")


# --- 6. gate simulate refuses what the evaluator refuses --------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--rule", "margin", "--episodes", "7"], "--episodes=7"),
        (["--rule", "sprt", "--max-episodes", "401"], "--max-episodes=401"),
    ],
)
def test_gate_simulate_refuses_odd_episode_counts_like_the_evaluator(
    args: list[str], needle: str
) -> None:
    result = runner.invoke(app, ["gate", "simulate", "--trials", "10", *args])
    assert result.exit_code == 2, result.output
    one_line_error(result.output, needle, "even")
