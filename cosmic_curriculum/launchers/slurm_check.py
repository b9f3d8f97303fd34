"""The Slurm launcher's preflight, before any GPU time: the commands are on PATH, the
controller answers, the partition and the gres exist, ``sbatch --test-only`` accepts the
job a training asks for, and a probe job proves the nodes see the workspace (it reads a
nonce written here and writes it back reversed; bounded wait). Each failure is one line
naming the [launcher] setting and Slurm's own words.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cosmic_curriculum.defaults import SLURM_NEVER_CLEARS, SLURM_PROBE_SECONDS
from cosmic_curriculum.launchers import LaunchError
from cosmic_curriculum.launchers.slurm_rules import (
    LIVE,
    missing_commands,
    reason_of,
    refusal,
    setting_for_reason,
)

if TYPE_CHECKING:
    from cosmic_curriculum.launchers.slurm import SlurmLauncher

COMMANDS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct")


def check_cluster(launcher: SlurmLauncher, workspace: Path) -> None:
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        raise LaunchError(missing_commands(missing))
    ping = launcher.slurm(["scontrol", "ping"])
    if ping.returncode != 0 or "is UP" not in ping.stdout:
        said = next((ln for ln in ping.stdout.splitlines() if "Slurmctld" in ln), "")
        said = said.strip() or _last(ping.stderr) or "no answer"
        raise LaunchError(
            f"the Slurm controller does not answer (scontrol ping: {said}); check that "
            "slurmctld runs and that SLURM_CONF or /etc/slurm/slurm.conf names it"
        )
    config = launcher.config
    if config.partition is not None:
        shown = launcher.slurm(["scontrol", "show", "partition", config.partition])
        if shown.returncode != 0:
            raise LaunchError(
                f"[launcher] partition {config.partition!r}: {_last(shown.stderr)}; the "
                f"cluster's partitions: {_partitions(launcher)}"
            )
    if config.gres is not None:
        _check_gres(launcher, config.gres)
    resources = [*launcher.resources(), *config.sbatch_args]
    test = launcher.slurm(["sbatch", "--test-only", *resources, "-o", "/dev/null", "--wrap=true"])
    if test.returncode != 0:
        raise LaunchError(refusal(test.stderr))
    _probe(launcher, workspace)


def _check_gres(launcher: SlurmLauncher, gres: str) -> None:
    wanted = gres.split(",")
    where = ["-p", launcher.config.partition] if launcher.config.partition else []
    listed = launcher.slurm(["sinfo", "-h", "-o", "%G", *where]).stdout.split()
    have = {g.split("(")[0] for entry in listed for g in entry.split(",")}
    for one in wanted:
        parts = one.split(":")
        name = parts[0]
        kind = parts[1] if len(parts) == 3 or (len(parts) == 2 and not parts[1].isdigit()) else None
        if not any(
            h.split(":")[0] == name and (kind is None or h.split(":")[1:2] == [kind]) for h in have
        ):
            on = f"partition {launcher.config.partition!r}" if where else "the cluster"
            raise LaunchError(
                f"[launcher] gres {gres!r}: no node of {on} has gres {one.rsplit(':', 1)[0]!r} "
                f"(sinfo: {', '.join(sorted(have)) or 'none'}); ask for one it has"
            )


def _probe(launcher: SlurmLauncher, workspace: Path) -> None:
    nonce = secrets.token_hex(8)
    probe = workspace / f".cosmic-probe-{nonce}"
    reply = workspace / f".cosmic-probe-{nonce}.reply"
    name = f"cosmic-probe-{nonce}"
    probe.write_text(nonce)
    tmp = f"{reply.name}.tmp"  # renamed when whole
    script = f'#!/bin/sh\nrev "{probe.name}" > "{tmp}" && mv "{tmp}" "{reply.name}"\n'
    c = launcher.config
    opts = {"--partition": c.partition, "--account": c.account, "--qos": c.qos}
    argv = ["sbatch", "--parsable", f"--job-name={name}", f"--chdir={workspace}",
            "--output=/dev/null", "--time=1", "--ntasks=1",
            *(f"{k}={v}" for k, v in opts.items() if v is not None)]  # fmt: skip
    job_id = ""
    try:
        done = launcher.slurm(argv, stdin=script)
        if done.returncode != 0:
            raise LaunchError(refusal(done.stderr))
        job_id = done.stdout.strip().split(";")[0]
        state, reason = _wait(launcher, job_id, reply)
        answer = reply.read_text().strip() if reply.exists() else ""
    finally:
        if job_id:
            launcher.slurm(["scancel", job_id])
        for path in (probe, reply, reply.with_name(reply.name + ".tmp")):
            path.unlink(missing_ok=True)
    if answer == nonce[::-1]:
        return
    if state == "PENDING":
        raise LaunchError(
            f"the probe job {job_id} stayed PENDING ({reason}) for "
            f"{'ever' if reason in SLURM_NEVER_CLEARS else f'{SLURM_PROBE_SECONDS:g} s'}: "
            f"check [launcher] {setting_for_reason(reason)}"
        )
    raise LaunchError(
        f"a Slurm job could not read and write the workspace {workspace} (probe job "
        f"{job_id} ended {state}); put it on a filesystem every node mounts at the same "
        'path (NFS, a shared home) or use [launcher] kind = "local"'
    )


def _wait(launcher: SlurmLauncher, job_id: str, reply: Path) -> tuple[str, str]:
    """The probe's last state and reason once it ended, its reason never clears, or the
    wait is over."""
    deadline = time.monotonic() + SLURM_PROBE_SECONDS
    state, reason = "PENDING", "None"
    while time.monotonic() < deadline:
        info = launcher.job_info(job_id) or {}
        state, reason = info.get("JobState", "UNKNOWN"), reason_of(info)
        if reply.exists() or state not in LIVE:
            break
        if state == "PENDING" and reason.split(",")[0] in SLURM_NEVER_CLEARS:
            break
        time.sleep(0.5)
    return state, reason


def _partitions(launcher: SlurmLauncher) -> str:
    listed = launcher.slurm(["sinfo", "-h", "-o", "%R"]).stdout.split()
    return ", ".join(sorted(set(listed))) or "none"


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
