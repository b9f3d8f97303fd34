"""The ``slurm`` launcher: each training is one batch job (`[launcher] kind = "slurm"`).

A job outlives the run that submitted it. Its name is the launch id
(``LaunchSpec.launch_id``, from the workspace, the experiment and the launch, saved in
the state before ``sbatch``), so a resumed run finds the same job by name (`attach`:
``squeue`` while the controller keeps it, then ``sacct -c``) and never submits it twice.
The batch script ``exec``s the training argv (never a shell string from config) in the
workspace (``--chdir``), so Slurm's ``--signal=B:USR1@signal_grace`` reaches the trainer,
which saves a step checkpoint and exits 138; its output goes straight to the attempt's
log (``--output``, ``--open-mode=append``: a continuation keeps the earlier part).

The job gets the submitter's environment (``--export=ALL``, Slurm's default: a cluster
job runs as its user, with the modules and virtualenv of the shell that submitted it)
plus the contract's variables and ``[launcher.env]``, set in sbatch's own environment so
that no value is cut at a comma. Each job state change is written into the log as a
``# slurm job N: STATE ...`` line, which `status` reads (no Slurm call of its own).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from cosmic_curriculum.defaults import (
    SLURM_ACCOUNTING_DAYS,
    SLURM_COMMAND_TIMEOUT_SECONDS,
    SLURM_POLL_SECONDS,
)
from cosmic_curriculum.launchers import (
    DEFAULT_GRACE_SECONDS,
    Handle,
    LaunchError,
    LaunchSpec,
    TrainerRecord,
)
from cosmic_curriculum.launchers.slurm_rules import (
    LIVE,
    exit_status,
    fields,
    judge,
    missing_commands,
    refusal,
)
from cosmic_curriculum.system.processes import LogTailer
from cosmic_curriculum.workspace.config import LauncherConfig
from cosmic_curriculum.workspace.trainer_log import SLURM_LINE

# Where a job the controller no longer keeps (after MinJobAge) is found: the job
# completion log (jobcomp/filetxt, what a cluster without slurmdbd has), then the
# accounting database (slurmdbd; plain sacct reports today's jobs unless given a start).
ACCOUNTING = (["-c"], ["-X", f"--starttime=now-{SLURM_ACCOUNTING_DAYS}days"])
FAILURES_ALLOWED = 10  # consecutive unanswered polls before the run reports it
HEADER_RE = re.compile(rb"^# \d{4}-\d\d-\d\dT[^\n]*\n", re.MULTILINE)


class SlurmJob:
    """A training submitted as a batch job: its name, id, log and what it last was."""

    def __init__(self, name: str, job_id: str, log_path: Path, tag: str, offset: int) -> None:
        self.name = name
        self.job_id = job_id
        self.log_path = log_path
        self.tag = tag
        self.tailer = LogTailer(log_path, start=offset)
        self.said = ""  # the last state line written into the log
        self.code: int | None = None
        self.ended_by: str | None = None
        self.stopping = False
        self.asked_at = 0.0
        self.interval = 0.0  # seconds between questions to the controller
        self.failures = 0

    def record(self) -> TrainerRecord:
        return TrainerRecord(None, None, None, self.tag, self.name, str(self.log_path))


class SlurmLauncher:
    """Submit, follow, stop and find again trainings that run as Slurm batch jobs."""

    def __init__(self, config: LauncherConfig) -> None:
        self.config = config

    # -- the launcher protocol -------------------------------------------------------

    def start(self, spec: LaunchSpec) -> SlurmJob:
        if not spec.launch_id:
            raise LaunchError("a Slurm job needs the attempt's launch id")
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        offset = spec.log_path.stat().st_size if spec.log_path.exists() else 0
        argv = [
            "sbatch", "--parsable", f"--job-name={spec.launch_id}",
            f"--output={spec.log_path}", "--open-mode=append", f"--chdir={spec.cwd}",
            f"--signal=B:USR1@{self.config.signal_grace}", "--requeue", "--export=ALL",
            *self.resources(), *self.config.sbatch_args,
        ]  # fmt: skip
        script = f"#!/bin/sh\nexec {shlex.join(list(spec.argv))}\n"
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "COSMIC_CURRICULUM_NO_GIT": "1",  # the curriculum commits, not the trainer
            "COSMIC_CURRICULUM_PYTHON": sys.executable,
            **dict(spec.env),
            **self.config.env,
        }
        done = self.slurm(argv, stdin=script, env=env)
        if done.returncode != 0:
            raise LaunchError(refusal(done.stderr))
        job_id = done.stdout.strip().split(";")[0]
        job = SlurmJob(spec.launch_id, job_id, spec.log_path, spec.tag, offset)
        self._say(job, f"submitted as {spec.launch_id}")
        return job

    def stream(self, handle: Handle) -> list[str]:
        return _own(handle).tailer.read_lines()

    def result(self, handle: Handle) -> int | None:
        job = _own(handle)
        if job.code is not None:
            return job.code
        # Asked soon after submission (a short job ends in a second), then every
        # SLURM_POLL_SECONDS: the interval doubles from a quarter second.
        if time.monotonic() - job.asked_at < job.interval:
            return None
        job.asked_at = time.monotonic()
        job.interval = min(SLURM_POLL_SECONDS, max(0.25, job.interval * 2))
        try:
            info = self.job_info(job.job_id)
        except LaunchError:
            job.failures += 1
            if job.failures >= FAILURES_ALLOWED:
                raise
            return None
        job.failures = 0
        if info is None:
            _append(job.log_path, f"error: Slurm job {job.job_id} is unknown to the cluster")
            job.code = 1
            return 1
        return self._judge(job, info)

    def ended_by(self, handle: Handle) -> str | None:
        """Why the job ended when the cluster ended it (time limit, preemption, requeue):
        the training is continued from its latest step checkpoint; else None."""
        return _own(handle).ended_by

    def stop(self, handle: Handle, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        """TERM to the trainer (``scancel --full --signal=TERM``: it saves a checkpoint),
        ``grace`` seconds, then ``scancel`` (Slurm kills after its KillWait)."""
        job = _own(handle)
        job.stopping = True
        if job.code is not None:
            return
        try:
            info = self.job_info(job.job_id) or {}
            if info.get("JobState") in LIVE and info.get("JobState") != "PENDING":
                self.slurm(["scancel", "--full", "--signal=TERM", job.job_id])
                if self._wait_end(job, grace):
                    return
            self.slurm(["scancel", job.job_id])
            self._wait_end(job, SLURM_COMMAND_TIMEOUT_SECONDS)
        except LaunchError:
            return  # unreachable: nothing more can be done from here

    def attach(
        self, record: TrainerRecord, grace: float = DEFAULT_GRACE_SECONDS
    ) -> Handle | Literal["stopped", "gone"]:
        if not record.launch_id:
            return "gone"
        job_id = self.find(record.launch_id)
        if job_id is None:
            return "gone"  # killed between saving the launch and submitting it
        log = Path(record.log_path or os.devnull)
        job = SlurmJob(record.launch_id, job_id, log, record.tag, _after_last_header(log))
        job.said = "(found again)"
        return job

    def check(self, workspace: Path) -> None:
        from cosmic_curriculum.launchers.slurm_check import check_cluster

        check_cluster(self, workspace)

    # -- what a job asks for, and what Slurm says --------------------------------------

    def resources(self) -> list[str]:
        """sbatch's options for what each job asks for ([launcher] settings)."""
        c = self.config
        opts = {"--partition": c.partition, "--account": c.account, "--qos": c.qos,
                "--constraint": c.constraint, "--gres": c.gres, "--gpus": c.gpus,
                "--cpus-per-task": c.cpus_per_task, "--mem": c.mem, "--time": c.time}  # fmt: skip
        return [f"{k}={v}" for k, v in opts.items() if v is not None]

    def job_info(self, job_id: str) -> dict[str, str] | None:
        """The job's fields (``scontrol show job`` while the controller keeps it, then the
        accounting's record: JobState, ExitCode); None: the cluster knows no such job."""
        done = self.slurm(["scontrol", "-o", "show", "job", job_id])
        if done.returncode == 0 and done.stdout.strip():
            return fields(done.stdout)
        for source in ACCOUNTING:
            argv = ["sacct", *source, "-n", "-P", "-j", job_id, "-o", "jobid,state,exitcode"]
            for line in self.slurm(argv).stdout.splitlines():
                parts = line.split("|")
                if len(parts) == 3 and parts[0] == job_id:
                    return {"JobState": parts[1].split()[0], "ExitCode": parts[2], "Final": "1"}
        return None

    def find(self, name: str) -> str | None:
        """The id of the newest job named ``name`` (live or kept, then finished)."""
        done = self.slurm(["squeue", "-h", "-t", "all", f"--name={name}", "-o", "%i"])
        if done.returncode != 0:
            raise LaunchError(f"squeue could not list the jobs: {_first(done.stderr)}")
        ids = [int(i) for i in done.stdout.split() if i.isdigit()]
        for source in ACCOUNTING if not ids else ():
            argv = ["sacct", *source, "-n", "-P", f"--name={name}", "-o", "jobid,jobname"]
            for line in self.slurm(argv).stdout.splitlines():
                job, _, job_name = line.partition("|")
                if job_name == name and job.isdigit():
                    ids.append(int(job))
        return str(max(ids)) if ids else None

    def slurm(
        self, argv: Sequence[str], *, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One Slurm command, bounded by SLURM_COMMAND_TIMEOUT_SECONDS."""
        if shutil.which(argv[0]) is None:
            raise LaunchError(missing_commands([argv[0]]))
        try:
            return subprocess.run(
                list(argv), input=stdin, env=env, capture_output=True, text=True,
                timeout=SLURM_COMMAND_TIMEOUT_SECONDS, stdin=None if stdin is not None
                else subprocess.DEVNULL,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise LaunchError(
                f"Slurm's {argv[0]} did not answer within {SLURM_COMMAND_TIMEOUT_SECONDS:g} s; "
                "is the controller up (scontrol ping)?"
            ) from None

    # -- plumbing ---------------------------------------------------------------------

    def _judge(self, job: SlurmJob, info: dict[str, str]) -> int | None:
        verdict = judge(job.job_id, info, job.stopping)
        if verdict.say:
            self._say(job, verdict.say)
        if verdict.cancel:
            self.slurm(["scancel", job.job_id])
        if verdict.code is None:
            return None
        job.ended_by = verdict.ended_by
        if verdict.line:
            _append(job.log_path, verdict.line)
        job.code = verdict.code
        return job.code

    def _say(self, job: SlurmJob, what: str) -> None:
        """A state change of the job, as one line of its log (what `status` shows)."""
        if what != job.said:
            job.said = what
            _append(job.log_path, f"{SLURM_LINE}{job.job_id}: {what}")

    def _wait_end(self, job: SlurmJob, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            info = self.job_info(job.job_id)
            if info is None or info.get("JobState") not in LIVE:
                job.code = exit_status((info or {}).get("ExitCode", "0:15")) or 143
                return True
            time.sleep(0.5)
        return False


def _first(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no answer"


def _append(log: Path, line: str) -> None:
    # O_APPEND, as Slurm's own writes into the same file (--open-mode=append)
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")


def _after_last_header(log: Path) -> int:
    """The byte offset just after the log's last launch header (what the job wrote since)."""
    try:
        data = log.read_bytes()
    except OSError:
        return 0
    headers = list(HEADER_RE.finditer(data))
    return headers[-1].end() if headers else len(data)


def _own(handle: Handle) -> SlurmJob:
    if not isinstance(handle, SlurmJob):
        raise TypeError(f"the slurm launcher cannot follow {type(handle).__name__}")
    return handle
