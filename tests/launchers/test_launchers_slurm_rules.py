"""The Slurm launcher's pure rules: what it makes of Slurm's fields, refusals and reasons."""

from __future__ import annotations

import pytest

from cosmic_curriculum.launchers.slurm_rules import (
    Verdict,
    exit_status,
    fields,
    judge,
    refusal,
    setting_for_reason,
)

SHOW = (
    "JobId=7 JobName=cosmic-x UserId=root(0) JobState=RUNNING Reason=None "
    "Restarts=0 BatchFlag=1 ExitCode=0:0 TimeLimit=00:01:00 BatchHost=cosmic1"
)


def test_fields_of_scontrol_show_job() -> None:
    got = fields(SHOW)
    assert got["JobState"] == "RUNNING" and got["BatchHost"] == "cosmic1"
    assert got["UserId"] == "root(0)" and got["TimeLimit"] == "00:01:00"
    assert fields("JobState=A JobState=B")["JobState"] == "A"  # the first of a key


@pytest.mark.parametrize(
    ("text", "code"),
    [("0:0", 0), ("1:0", 1), ("138:0", 138), ("0:15", 143), ("0:9", 137), ("x:y", 1)],
)
def test_exit_status(text: str, code: int) -> None:
    assert exit_status(text) == code


@pytest.mark.parametrize(
    ("reason", "setting"),
    [
        ("PartitionTimeLimit", "time"),
        ("QOSMaxWallDurationPerJobLimit", "time"),
        ("QOSMaxGRESPerJob", "gres / gpus"),
        ("Invalid partition name specified", "partition"),
        ("Invalid account specified", "account"),
        ("Invalid qos specification", "qos"),
        ("Invalid feature specification", "constraint"),
        ("Memory required by task is not available", "mem"),
        ("Requested node configuration is not available", "partition, sbatch_args"),
        ("ReqNodeNotAvail, UnavailableNodes:n1", "partition, sbatch_args"),
        ("JobHeldAdmin", "partition, account, qos and constraint"),
    ],
)
def test_the_setting_behind_a_reason(reason: str, setting: str) -> None:
    assert setting_for_reason(reason) == setting


def test_a_refusal_is_one_line_naming_the_setting() -> None:
    err = "sbatch: error: Batch job submission failed: Invalid feature specification\n"
    assert refusal(err) == (
        "sbatch refused the job: Invalid feature specification (check [launcher] constraint)"
    )
    assert "no reason given" in refusal("")


def info(state: str, **more: str) -> dict[str, str]:
    return {"JobState": state, "Reason": "None", "Restarts": "0", "ExitCode": "0:0", **more}


@pytest.mark.parametrize(
    ("stopping", "job", "want"),
    [
        # going on: its state for the log (what status shows)
        (False, info("PENDING", Reason="Resources"), Verdict(say="PENDING (Resources)")),
        (False, info("PENDING", Reason="Priority"), Verdict(say="PENDING (Priority)")),
        (False, info("RUNNING", BatchHost="n3"), Verdict(say="RUNNING on n3")),
        (False, info("COMPLETING", NodeList="n4"), Verdict(say="COMPLETING on n4")),
        # ended by the training itself
        (False, info("COMPLETED"), Verdict(0)),
        (False, info("FAILED", ExitCode="2:0"), Verdict(2)),
        (True, info("CANCELLED", ExitCode="0:15"), Verdict(143)),  # our own stop
        (True, info("FAILED", ExitCode="143:0"), Verdict(143)),  # saved on our TERM
        # ended by the cluster: continued
        (False, info("TIMEOUT", TimeLimit="00:01:00"),
         Verdict(143, "TIMEOUT (time limit 00:01:00)", line="# slurm job 7: TIMEOUT")),
        (False, info("PREEMPTED", ExitCode="0:15"),
         Verdict(143, "PREEMPTED", line="# slurm job 7: PREEMPTED")),
        (False, info("NODE_FAIL", ExitCode="0:9"),
         Verdict(137, "NODE_FAIL", line="# slurm job 7: NODE_FAIL")),
        (False, info("FAILED", ExitCode="138:0"),
         Verdict(138, "SIGUSR1 before the time limit", line="# slurm job 7: FAILED (138)")),
        (False, info("FAILED", ExitCode="143:0"),
         Verdict(143, "SIGTERM from the scheduler", line="# slurm job 7: FAILED (143)")),
        (False, info("PENDING", Restarts="1"),
         Verdict(143, "REQUEUED", line="# slurm job 7: requeued", cancel=True)),
        (False, info("CANCELLED", Restarts="1", ExitCode="0:15"),  # found again after that
         Verdict(143, "REQUEUED", line="# slurm job 7: requeued", cancel=True)),
        (True, info("PENDING", Restarts="1"), Verdict(say="PENDING (None)")),
        # errors, named
        (False, info("PENDING", Reason="PartitionTimeLimit"), Verdict(
            1, say="PENDING (PartitionTimeLimit)", cancel=True,
            line="error: Slurm job 7 stayed PENDING for a reason that will not clear: "
            "PartitionTimeLimit (check [launcher] time); cancelled it")),
        (False, info("PENDING", Reason="ReqNodeNotAvail,_UnavailableNodes:n9"), Verdict(
            1, say="PENDING (ReqNodeNotAvail, UnavailableNodes:n9)", cancel=True,
            line="error: Slurm job 7 stayed PENDING for a reason that will not clear: "
            "ReqNodeNotAvail, UnavailableNodes:n9 (check [launcher] partition, sbatch_args); "
            "cancelled it")),
        (False, info("CANCELLED", ExitCode="0:15"), Verdict(
            143, line="error: Slurm job 7 was cancelled from outside this run (scancel)")),
        (False, info("OUT_OF_MEMORY", ExitCode="0:9"),
         Verdict(137, line="error: Slurm job 7 ended OUT_OF_MEMORY")),
    ],
)  # fmt: skip
def test_judge(stopping: bool, job: dict[str, str], want: Verdict) -> None:
    assert judge("7", job, stopping) == want
