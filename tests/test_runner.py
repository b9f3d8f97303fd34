"""The runner: process start times, group stop, pid-reuse safety, log tailing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cosmic_curriculum.system import processes as runner


def test_start_time_matches_proc_and_is_none_for_dead_pid() -> None:
    assert runner.process_start_time(os.getpid()) is not None
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert runner.process_start_time(proc.pid) is None


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
