"""The local launcher: its own session, output appended to the log, progress, timeouts."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from cosmic_curriculum.launchers import LaunchSpec, watch
from cosmic_curriculum.launchers.local import LocalLauncher, LocalProcess
from cosmic_curriculum.system import processes as runner

FAKES = Path(__file__).resolve().parents[1] / "fakes"
LOCAL = LocalLauncher()


def _spec(tmp_path: Path, argv: list[str], **kw: object) -> LaunchSpec:
    return LaunchSpec(argv=argv, cwd=tmp_path, log_path=tmp_path / "logs" / "x.log", **kw)  # type: ignore[arg-type]


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


def test_launcher_env_of_the_config_reaches_the_local_trainer(tmp_path: Path) -> None:
    """`[launcher.env]` applies with kind = "local" too (it was silently dropped)."""
    from cosmic_curriculum.curriculum.context import make_launcher
    from cosmic_curriculum.workspace.config_file import load_config

    toml = tmp_path / "stages.toml"
    toml.write_text('[[stages]]\nname = "a"\n[launcher.env]\nMY_SETTING = "x y"\n')
    launcher = make_launcher(load_config(toml).launcher, tmp_path)
    code = "import os; print(os.environ['MY_SETTING'], os.environ['COSMIC_CURRICULUM_NO_GIT'])"
    proc = launcher.start(_spec(tmp_path, [sys.executable, "-c", code]))
    assert watch(launcher, proc).returncode == 0
    assert (tmp_path / "logs" / "x.log").read_text().split() == ["x", "y", "1"]


# A trainer that a signal from outside ends: handled (exit 128 + it, as the built-in
# trainers do after saving), or not (killed by it); a plain failure ends by itself.
ENDINGS = [
    (
        "import os,signal; signal.signal(signal.SIGTERM, lambda *_: os._exit(143));"
        " os.kill(os.getpid(), signal.SIGTERM); signal.pause()",
        "SIGTERM from outside",
    ),
    ("import os,signal; os.kill(os.getpid(), signal.SIGUSR1)", "SIGUSR1 from outside"),
    ("import sys; sys.exit(128 + 10)", "SIGUSR1 from outside"),
    ("import os,signal; os.kill(os.getpid(), signal.SIGINT)", None),  # a Ctrl-C: not ours
    ("import sys; sys.exit(1)", None),
    ("pass", None),
]


@pytest.mark.parametrize(("code", "reason"), ENDINGS)
def test_ended_by_names_a_signal_from_outside(tmp_path: Path, code: str, reason: str) -> None:
    outcome = watch(LOCAL, LOCAL.start(_spec(tmp_path, [sys.executable, "-c", code])))
    assert outcome.ended_by == reason


def test_our_own_stop_is_never_an_ending_from_outside(tmp_path: Path) -> None:
    code = (
        "import signal,sys; signal.signal(signal.SIGTERM, lambda *_: sys.exit(143)); signal.pause()"
    )
    proc = LOCAL.start(_spec(tmp_path, [sys.executable, "-c", code]))
    outcome = watch(LOCAL, proc, timeout=0.5)  # --attempt-timeout: our stop() sends TERM
    assert outcome.timed_out and LOCAL.result(proc) == 143
    assert outcome.ended_by is None and LOCAL.ended_by(proc) is None
