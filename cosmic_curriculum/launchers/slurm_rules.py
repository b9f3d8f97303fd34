"""What the Slurm launcher makes of what Slurm says, as pure functions: a job's fields and
exit status, the [launcher] setting behind a refusal or a PENDING reason, and the verdict
on each look at a job (:func:`judge`): still going, ended, or ended by the cluster (then
the curriculum continues the training from its latest step checkpoint).
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cosmic_curriculum.defaults import SLURM_NEVER_CLEARS
from cosmic_curriculum.workspace.trainer_log import SLURM_LINE

LIVE = (
    "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "RESIZING", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD",
)  # fmt: skip
# Ends that are the cluster's doing, not the training's: the work is continued.
CONTINUED = ("TIMEOUT", "PREEMPTED", "NODE_FAIL")
# A trainer's exit after it saved a step checkpoint on Slurm's --signal (SIGUSR1) or on
# the SIGTERM a preemption's grace time sends: continued too.
SIGNALLED = {
    128 + signal.SIGUSR1: "SIGUSR1 before the time limit",
    128 + signal.SIGTERM: "SIGTERM from the scheduler",
}
TERMINATED = 128 + signal.SIGTERM
# What sbatch's refusal names, and the setting that asked for it.
REFUSALS = (
    ("partition", "partition"), ("account", "account"), ("qos", "qos"),
    ("gres", "gres / gpus"), ("feature", "constraint"), ("time limit", "time"),
    ("memory", "mem"), ("processors", "cpus_per_task"), ("node", "partition, sbatch_args"),
)  # fmt: skip


def reason_of(info: Mapping[str, str]) -> str:
    """A job's PENDING reason as Slurm words it (``scontrol -o`` writes its spaces as _)."""
    return info.get("Reason", "None").replace("_", " ")


def setting_for_reason(reason: str) -> str:
    """The [launcher] setting behind a PENDING reason or a refusal Slurm gave."""
    low = reason.lower()
    if "timelimit" in low or "wallduration" in low:
        return "time"
    if "reqnodenotavail" in low:  # the partition's nodes are down, or those asked for
        return "partition, sbatch_args"
    if "gres" in low:
        return "gres / gpus"
    for word, setting in REFUSALS:
        if word.replace(" ", "") in low.replace(" ", ""):
            return setting
    return "partition, account, qos and constraint"


def refusal(stderr: str) -> str:
    """sbatch's refusal in one line, naming the setting it concerns."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    said = lines[-1] if lines else "no reason given"
    for prefix in ("sbatch: error: ", "Batch job submission failed: "):
        said = said.removeprefix(prefix)
    return f"sbatch refused the job: {said} (check [launcher] {setting_for_reason(said)})"


def missing_commands(names: Sequence[str]) -> str:
    return (
        f'[launcher] kind = "slurm" needs {", ".join(names)} on PATH: not found; install '
        "Slurm's client commands (e.g. apt-get install slurm-client) or load the cluster's "
        "Slurm module, or set PATH"
    )


def fields(line: str) -> dict[str, str]:
    """``scontrol -o show job``'s ``Key=Value`` pairs (the first of each key)."""
    found: dict[str, str] = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep and key not in found:
            found[key] = value
    return found


def exit_status(text: str) -> int:
    """A job's exit code from Slurm's ``code:signal`` (a signal counts 128 + it)."""
    code, _, sig = text.partition(":")
    try:
        return 128 + int(sig) if sig and int(sig) else int(code)
    except ValueError:
        return 1


@dataclass(frozen=True)
class Verdict:
    """One look at a job: ``code`` None while it goes on; ``say`` its state for the log
    (what `status` shows); ``line`` what to append once it ended; ``cancel``: scancel it
    (a requeued job, or one that would wait forever)."""

    code: int | None = None
    ended_by: str | None = None
    say: str = ""
    line: str = ""
    cancel: bool = False


def judge(job_id: str, info: Mapping[str, str], stopping: bool) -> Verdict:
    """The verdict on a job's fields (``scontrol show job`` or its ``sacct -c`` record);
    ``stopping``: this run is stopping it."""
    state = info.get("JobState", "")
    reason = reason_of(info)
    restarts = int(info.get("Restarts", "0") or 0)
    if restarts > 0 and not stopping:
        # Requeued (scontrol requeue, a preemption; each job is submitted once, so any
        # restart is one): Slurm would run the same argv from its start, the curriculum
        # continues it from its checkpoint in a new job instead.
        return Verdict(TERMINATED, "REQUEUED", line=f"{SLURM_LINE}{job_id}: requeued", cancel=True)
    if state == "PENDING":
        say = f"PENDING ({reason})"
        if reason.split(",")[0] in SLURM_NEVER_CLEARS and not stopping:
            line = (
                f"error: Slurm job {job_id} stayed PENDING for a reason that will not clear: "
                f"{reason} (check [launcher] {setting_for_reason(reason)}); cancelled it"
            )
            return Verdict(1, say=say, line=line, cancel=True)
        return Verdict(say=say)
    if state in LIVE:
        return Verdict(say=f"{state} on {info.get('BatchHost') or info.get('NodeList') or '?'}")
    code = exit_status(info.get("ExitCode", "0:0"))
    if state in CONTINUED:
        limit = info.get("TimeLimit", "")
        ended_by = f"TIMEOUT (time limit {limit})" if state == "TIMEOUT" and limit else state
        return Verdict(code or TERMINATED, ended_by, line=f"{SLURM_LINE}{job_id}: {state}")
    if state == "CANCELLED" and not stopping:
        line = f"error: Slurm job {job_id} was cancelled from outside this run (scancel)"
        return Verdict(code or TERMINATED, line=line)
    if state not in ("COMPLETED", "FAILED", "CANCELLED"):  # OUT_OF_MEMORY, DEADLINE...
        return Verdict(code or 1, line=f"error: Slurm job {job_id} ended {state}")
    if code in SIGNALLED and not stopping:
        # The trainer saved a step checkpoint on the signal and exited 128 + it.
        return Verdict(code, SIGNALLED[code], line=f"{SLURM_LINE}{job_id}: {state} ({code})")
    return Verdict(code)
