"""The runner: own session, log file, progress lines, group stop, pid-reuse safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cosmic_curriculum import runner
from cosmic_curriculum.launchers import LaunchSpec, watch
from cosmic_curriculum.launchers.local import LocalLauncher, LocalProcess

FAKES = Path(__file__).parent / "fakes"
LOCAL = LocalLauncher()


def _spec(tmp_path: Path, argv: list[str], **kw: object) -> LaunchSpec:
    return LaunchSpec(argv=argv, cwd=tmp_path, log_path=tmp_path / "logs" / "x.log", **kw)  # type: ignore[arg-type]


def test_start_time_matches_proc_and_is_none_for_dead_pid() -> None:
    assert runner.process_start_time(os.getpid()) is not None
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert runner.process_start_time(proc.pid) is None


def test_launch_appends_to_log_and_reports_progress(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "x.log"
    log.parent.mkdir()
    log.write_text("earlier line\n")
    proc = LOCAL.start(
        _spec(
            tmp_path, [sys.executable, str(FAKES / "fake_trainer.py"), "exp1", "--timesteps", "400"]
        )
    )
    assert proc.pgid == proc.pid and os.getpgid(proc.pid) == proc.pid  # own group
    assert os.getsid(proc.pid) == proc.pid  # own session
    seen: list[dict[str, object]] = []
    outcome = watch(LOCAL, proc, on_progress=seen.append)
    assert outcome.returncode == 0
    assert [p["timesteps"] for p in seen] == [100, 200, 300, 400]
    text = log.read_text()
    assert text.startswith("earlier line\n") and "fake trainer: exp1" in text
    assert (tmp_path / "checkpoints" / "exp1" / "final.zip").exists()


def test_trainer_environment_contract(tmp_path: Path) -> None:
    code = (
        "import os;print(os.environ['PYTHONUNBUFFERED'], os.environ['COSMIC_CURRICULUM_NO_GIT'],"
        " os.environ['COSMIC_CURRICULUM_PYTHON'])"
    )
    proc = LOCAL.start(_spec(tmp_path, [sys.executable, "-c", code]))
    watch(LOCAL, proc)
    assert (tmp_path / "logs" / "x.log").read_text().split() == ["1", "1", sys.executable]


def test_pass_fds_are_inherited(tmp_path: Path) -> None:
    r, w = os.pipe()
    try:
        code = f"import os; os.fstat({w}); print('fd ok')"
        proc = LOCAL.start(_spec(tmp_path, [sys.executable, "-c", code], pass_fds=(w,)))
        watch(LOCAL, proc)
        assert "fd ok" in (tmp_path / "logs" / "x.log").read_text()
    finally:
        os.close(r)
        os.close(w)


def test_timeout_stops_whole_group_including_grandchildren(tmp_path: Path) -> None:
    # The trainer starts a grandchild that ignores SIGTERM: KILL after the grace period.
    code = (
        "import subprocess,sys,time;"
        "p=subprocess.Popen([sys.executable,'-c','import signal,time;"
        "signal.signal(signal.SIGTERM,signal.SIG_IGN);time.sleep(60)']);"
        "print('grandchild', p.pid, flush=True); time.sleep(60)"
    )
    proc = LOCAL.start(_spec(tmp_path, [sys.executable, "-c", code]))
    t0 = time.monotonic()
    outcome = watch(LOCAL, proc, timeout=1.0, grace=0.5)
    assert outcome.timed_out
    assert time.monotonic() - t0 < 8
    assert runner.group_members(proc.pgid) == []


def test_exception_while_watching_stops_the_group(tmp_path: Path) -> None:
    proc = LOCAL.start(_spec(tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"]))

    # A signal handler raising mid-wait (as the orchestrator's does) must not orphan it.
    with pytest.raises(KeyboardInterrupt):
        _interrupt_soon(proc, tmp_path)
    assert runner.group_members(proc.pgid) == []


def _interrupt_soon(proc: LocalProcess, tmp_path: Path) -> None:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        watch(LOCAL, proc, grace=1.0)
    finally:
        signal.signal(signal.SIGALRM, old)


def test_recorded_group_verification_refuses_reused_pid(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )
    try:
        start = runner.process_start_time(proc.pid)
        assert runner.recorded_group_is_ours(proc.pid, proc.pid, start)
        # A different start time means the pid now belongs to someone else: hands off.
        assert not runner.recorded_group_is_ours(proc.pid, proc.pid, (start or 0) + 1)
        assert not runner.stop_recorded_group(proc.pid, proc.pid, (start or 0) + 1, grace=0.5)
        assert proc.poll() is None
        assert runner.stop_recorded_group(proc.pid, proc.pid, start, grace=2.0)
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_recorded_group_without_leader_is_still_stopped(tmp_path: Path) -> None:
    # The leader exits but leaves a worker in its group (an orphaned trainer worker).
    code = (
        "import subprocess,sys;"
        "p=subprocess.Popen([sys.executable,'-c','import time;time.sleep(30)']);"
        "print(p.pid,flush=True)"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE
    )
    start = runner.process_start_time(leader.pid)
    worker = int(leader.stdout.readline())  # type: ignore[union-attr]
    leader.wait()
    assert runner.group_members(leader.pid) == [worker]
    assert runner.stop_recorded_group(leader.pid, leader.pid, start, grace=2.0)
    assert runner.group_members(leader.pid) == []


def test_tail_text_returns_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert runner.tail_text(log, lines=3) == "line 97\nline 98\nline 99"
    assert runner.tail_text(tmp_path / "missing.log") == ""


def test_log_tailer_keeps_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("one\ntw")
    tailer = runner.LogTailer(log, start=0)
    assert tailer.read_lines() == ["one"]
    with open(log, "a") as fh:
        fh.write("o\n")
    assert tailer.read_lines() == ["two"]
