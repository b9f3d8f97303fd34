"""Delivering the outbox to the trackers, so that a tracker never hurts the run.

Each remote tracker (MLflow, W&B) is delivered by its own process
(``python -m cosmic_curriculum.tracking.delivery TRACKER WORKSPACE``), in its own session
with no descriptor of ours, all in parallel and each stopped with its process group at
``[tracking] timeout``: one that hangs (a server that accepts and never answers) costs
the run that long at most, and the others are not held up. Its progress (lines
delivered, run ids) is saved after every event, so what it did not send is sent by the
next delivery, this run's or the next one's. TensorBoard writes local files here.
Credentials (``WANDB_API_KEY``, ``MLFLOW_TRACKING_PASSWORD``, ...) reach the delivery
through the environment only; nothing of them is written anywhere.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.tracking import metrics as m
from cosmic_curriculum.tracking import outbox
from cosmic_curriculum.tracking.backends import (
    MlflowTracker,
    TensorboardTracker,
    Tracker,
    WandbTracker,
)

SETTINGS_ENV = "COSMIC_TRACKING_SETTINGS"
KILL_GRACE = 2.0  # seconds between TERM and KILL of a delivery that overstayed


def deliver(name: str, ws: Path, logs: Path, settings: dict[str, Any], group: str) -> int:
    """Send what ``name`` has not had yet, in order; how many items it sent."""
    progress = outbox.load_progress(logs, name)
    runs: dict[str, str] = progress["runs"]
    offsets: dict[str, int] = progress["offsets"]
    events = outbox.read_lines(outbox.events_file(logs))
    meta = {e["key"]: e for e in events if e.get("kind") == "start" and "key" in e}
    cid = outbox.curriculum_id(logs)
    tracker: Tracker
    if name == "mlflow":
        tracker = MlflowTracker(settings, runs, cid, group)
    elif name == "wandb":
        tracker = WandbTracker(settings, runs, cid, group)
    else:
        tracker = TensorboardTracker(ws / "logs" / "tensorboard" / m.CURRICULUM_KEY)
    sent = 0

    def save() -> None:
        outbox.save_progress(logs, name, progress)

    def scalars(key: str) -> None:
        nonlocal sent
        path = outbox.scalars_file(logs, key)
        rel = f"{outbox.SCALARS}/{path.name}"
        start = int(offsets.get(rel, 0))
        lines = outbox.read_lines(path, start)
        if not lines or name == "tensorboard":  # SB3 wrote them to TensorBoard itself
            offsets[rel] = start + len(lines)
            return
        tracker.open(key, meta.get(key, {}))
        for line in lines:
            values = line.get("metrics")
            if isinstance(values, dict) and values:
                tracker.metrics(key, values, int(line.get("step") or 0), False)
                sent += 1
        offsets[rel] = start + len(lines)
        save()

    try:
        start = int(offsets.get(outbox.EVENTS, 0))
        for index in range(start, len(events)):
            event = events[index]
            key = event.get("key")
            if isinstance(key, str):
                if event.get("kind") == "decision":
                    scalars(key)  # the training's curves before the run ends
                tracker.open(key, meta.get(key, event))
                if event.get("kind") == "decision":
                    tracker.metrics(key, event.get("metrics") or {}, int(event["step"]), True)
                    tracker.tags(key, event.get("tags") or {})
                    kept = [ws / p for p in event.get("artifacts") or [] if (ws / p).is_file()]
                    if kept:
                        tracker.artifacts(key, kept)
                    if event.get("end"):
                        tracker.end(key)
                sent += 1
            offsets[outbox.EVENTS] = index + 1
            save()
        spool = outbox.directory(logs) / outbox.SCALARS
        for path in sorted(spool.glob("*.jsonl")) if spool.is_dir() else []:
            scalars(path.stem)
        save()
    finally:
        tracker.close()
    return sent


def local_store(uri: str) -> bool:
    """A file store (``file:./mlruns``, a plain path), which MLflow 3 keeps only on request."""
    scheme = urlsplit(uri).scheme
    return scheme in ("", "file") or len(scheme) == 1  # a Windows drive letter


def send_all(
    trackers: list[str],
    ws: Path,
    logs: Path,
    settings: dict[str, dict[str, Any]],
    group: str,
    timeout: float,
) -> list[tuple[str, str]]:
    """Deliver to every tracker named, the remote ones in parallel processes, within
    ``timeout`` seconds; the (tracker, problem) pairs of those that did not finish."""
    problems: list[tuple[str, str]] = []
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for name in trackers:
        if name == "tensorboard":
            continue
        log = outbox.directory(logs) / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        given = {"settings": settings[name], "group": group, "timeout": timeout}
        env = {**os.environ, SETTINGS_ENV: json.dumps(given)}
        if name == "mlflow" and local_store(settings[name]["tracking_uri"]):
            env["MLFLOW_ALLOW_FILE_STORE"] = "true"  # asked for by name: MLflow 3 refuses it
        with open(log, "ab") as out:
            try:
                procs[name] = subprocess.Popen(
                    python_argv("-m", "cosmic_curriculum.tracking.delivery", name, str(ws)),
                    cwd=ws,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                problems.append((name, f"could not start its delivery: {exc.strerror or exc}"))
    try:
        if "tensorboard" in trackers:
            try:
                deliver("tensorboard", ws, logs, {}, group)
            except Exception as exc:  # a tracker never costs the run
                problems.append(("tensorboard", f"{type(exc).__name__}: {exc}"))
        deadline = time.monotonic() + timeout
        for name, proc in procs.items():
            try:
                code = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                runner.stop_group(proc.pid, KILL_GRACE, reap=proc.poll)
                problems.append(
                    (
                        name,
                        f"did not finish within [tracking] timeout = {timeout:g} s and was stopped",
                    )
                )
                continue
            if code != 0:
                said = runner.tail_text(outbox.directory(logs) / f"{name}.log", lines=1).strip()
                problems.append((name, f"failed (exit status {code}): {said[-300:]}"))
    except BaseException:  # a signal to the run: leave no delivery behind
        for proc in procs.values():
            if proc.poll() is None:
                runner.stop_group(proc.pid, KILL_GRACE, reap=proc.poll)
        raise
    return problems


def main(argv: list[str]) -> int:
    name, ws = argv[0], Path(argv[1])
    given = json.loads(os.environ.get(SETTINGS_ENV, "{}"))
    # Orphaned by a run killed -9, it still ends: SIGALRM's default action kills it.
    signal.alarm(math.ceil(float(given.get("timeout") or 60) + KILL_GRACE))
    try:
        sent = deliver(name, ws, ws / "logs", given.get("settings") or {}, given.get("group", ""))
    except Exception as exc:
        # One line, the last of its log: the run's warning quotes it.
        print(f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", flush=True)
        return 1
    print(f"delivered {sent} to {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
