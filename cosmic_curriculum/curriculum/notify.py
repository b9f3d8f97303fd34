"""Tell a human what a multi-day run needs: `notify_command` and its outbox.

``notify_command`` (an argv in stages.toml) is called on the events of ``notify_on``:
``blocked``, ``done``, ``attempt_error``, ``interrupted`` (default) and per attempt
``passed`` / ``failed``. It gets the notification as one JSON object on stdin and its main
fields as ``COSMIC_*`` environment variables (:data:`ENV_KEYS`).

A notifier must never hurt the run. Each notification is first queued in the state's
outbox (an event of the pure rules, saved), then the command runs in its own session with
no descriptor of ours (the workspace lock stays ours), after the decision's commit, and
is killed with its whole process group after ``notify_timeout`` seconds; of its output
only the last ``NOTIFY_OUTPUT_TAIL_BYTES`` are kept. Any failure is a warning. Exit
``NOTIFY_REFUSED_EXIT`` (65) says the receiver refused this note for good: it is dropped
and the next ones are sent. Any other failure keeps it in the outbox for the next run, up
to ``NOTIFY_MAX_TRIES`` tries, so no note holds back the others forever.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.next_action import describe, next_action
from cosmic_curriculum.core.rules import decision_news, notifier_outcome
from cosmic_curriculum.defaults import NOTIFY_MAX_TRIES, NOTIFY_OUTPUT_TAIL_BYTES
from cosmic_curriculum.reports.review import continued_note, entry_continuations
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.layout import REPORT_FILE
from cosmic_curriculum.workspace.state import LogEntry

if TYPE_CHECKING:
    from cosmic_curriculum.curriculum.context import Run

KILL_GRACE = 2.0  # seconds between TERM and KILL of a notifier that overstayed
# payload key → environment variable (the rest is only on stdin)
ENV_KEYS = {
    "event": "COSMIC_EVENT",
    "workspace": "COSMIC_WORKSPACE",
    "stage": "COSMIC_STAGE",
    "stage_name": "COSMIC_STAGE_NAME",
    "experiment": "COSMIC_EXPERIMENT",
    "message": "COSMIC_MESSAGE",
    "next": "COSMIC_NEXT",
    "review": "COSMIC_REVIEW",
    "report": "COSMIC_REPORT",
}
# what a decision carries from its evaluation record, when the record has it
RECORD_KEYS = ("score", "gap", "gap_ci95", "elo", "elo_ci95", "elo_err95", "summary")


def wanted(run: Run, event: str) -> bool:
    return run.config.notify_command is not None and event in run.config.notify_on


def notify(run: Run, event: str, detail: str | None = None) -> None:
    """Queue ``event`` (saved) and send it now; a no-op unless ``notify_on`` asks for it."""
    queued = queue(run, event, detail)
    if queued is not None:
        deliver(run, only={queued})


def queue(run: Run, event: str, detail: str | None = None) -> str | None:
    """Queue ``event`` in the outbox (saved) and return its id; None unless ``notify_on``
    asks for it."""
    if not wanted(run, event):
        return None
    note = notification(run, event, detail)
    run.record(t.NotificationQueued(note))
    return str(note["id"])


def queue_decision(run: Run) -> str | None:
    """Queue (not saved: the caller's next save carries it) the news of the decision just
    taken: ``blocked`` or ``done`` when the curriculum stops, else ``passed``/``failed``."""
    event = decision_news(run.state)
    if not wanted(run, event):
        return None
    note = notification(run, event)
    run.apply(t.NotificationQueued(note))
    return str(note["id"])


def deliver(run: Run, only: set[str] | None = None) -> None:
    """Send the outbox (or its notifications ``only``) in order. A note the notifier
    refused for good (exit ``NOTIFY_REFUSED_EXIT``) leaves the outbox and the next one is
    sent; any other failure keeps the note (one more try, at most ``NOTIFY_MAX_TRIES``)
    and ends this round (a notifier that is down would make every later one wait its
    timeout too)."""
    argv = run.config.notify_command
    if argv is None:
        return

    for note in list(run.state.notify_outbox or []):
        if only is not None and note.get("id") not in only:
            continue
        problem, code = send(run.resolve_program(argv), note, run.config.notify_timeout, run.ws)
        outcome = notifier_outcome(code)
        if outcome == "sent":
            run.record(t.NotificationSent(str(note["id"])))
            run.unsettled.add("notifications")
            continue
        run.record(t.NotificationFailed(str(note["id"]), permanent=outcome == "refused"))
        run.unsettled.add("notifications")
        kept = [n for n in run.state.notify_outbox or [] if n.get("id") == note.get("id")]
        if outcome == "refused":
            fate = "it refused this notification for good: dropped; the next ones are sent"
        elif kept:
            tries = kept[0].get("tries")
            fate = (
                f"the run goes on and the next run sends it again (try {tries} of "
                f"{NOTIFY_MAX_TRIES})"
            )
        else:
            fate = f"dropped after {NOTIFY_MAX_TRIES} tries, so it holds back no later one"
        run.reporter.warning(
            f"notify_command {argv[0]} {problem} (event {note.get('event')}); {fate}"
        )
        if outcome == "failed":
            return


def send(
    argv: list[str], note: dict[str, Any], timeout: float, cwd: Path
) -> tuple[str | None, int | None]:
    """Run the notifier once: (None, 0) when it exited 0, else (what went wrong in one
    line, its exit status or None when it did not start or was killed)."""
    env = {**os.environ, **environment(note)}
    with tempfile.TemporaryFile() as stdin:
        stdin.write(json.dumps(note).encode() + b"\n")
        stdin.seek(0)
        try:
            # Its own session: our signals and the terminal's do not reach it, and a
            # timeout kills everything it started. No inherited descriptor (lock, logs).
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
                pass_fds=(),
            )
        except OSError as exc:
            return f"could not start: {exc.strerror or exc}", None
        try:
            tail = _read_tail(proc, time.monotonic() + timeout)
        except BaseException:  # a signal to the run: do not leave the notifier behind
            runner.stop_group(proc.pid, KILL_GRACE, reap=proc.poll)
            raise
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
        code = proc.poll()
        if code is None:
            runner.stop_group(proc.pid, KILL_GRACE, reap=proc.poll)
            return f"did not finish within notify_timeout = {timeout:g} s and was killed", None
        if code == 0:
            return None, 0
        lines = tail[-2000:].decode("utf-8", "replace").strip().splitlines()
        said = f": {lines[-1]}" if lines else ""
        return f"exited with status {code}{said}", code


def _read_tail(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    """Read the notifier's output until it exits or ``deadline``, keeping only its last
    ``NOTIFY_OUTPUT_TAIL_BYTES``: a chatty notifier costs no disk and no memory."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    tail = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(tail)
            if sel.select(min(left, 0.2)):
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:  # nothing after all; not the end
                    continue
                if not chunk:  # end of output: wait for the exit until the deadline
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(max(0.0, deadline - time.monotonic()))
                    return bytes(tail)
                tail += chunk
                del tail[:-NOTIFY_OUTPUT_TAIL_BYTES]
            elif proc.poll() is not None:
                # Exited, but something it started still holds the pipe: what is here.
                return bytes(tail)


def environment(note: dict[str, Any]) -> dict[str, str]:
    return {var: "" if note.get(key) is None else str(note[key]) for key, var in ENV_KEYS.items()}


def notification(run: Run, event: str, detail: str | None = None) -> dict[str, Any]:
    """The JSON object a notifier gets for ``event`` in the run's current state."""
    state, config = run.state, run.config
    entry = state.log[-1] if event in ("blocked", "done", "passed", "failed") else None
    flight = state.in_flight
    if entry is not None:
        stage_index, experiment, attempt = entry.stage_index, entry.experiment, entry.attempt
    elif flight is not None:
        stage_index, experiment, attempt = flight.stage_index, flight.experiment, flight.attempt
    else:
        stage_index, experiment, attempt = state.stage_index, None, state.attempt
    stage_name = config.stages[stage_index].name if stage_index < len(config.stages) else None
    now = utc_now()
    review = run.paths.review(stage_name) if event == "blocked" and stage_name else None
    next_step = _next(run, event)
    return {
        "id": f"{event}:{experiment or 'run'}:{now}",
        "event": event,
        "time": now,
        "workspace": str(run.ws),
        "status": state.status,
        "stage": stage_index + 1,
        "stage_name": stage_name,
        "experiment": experiment,
        "attempt": attempt,
        "decision": _decision(run, entry) if entry is not None else None,
        "error": detail,
        "message": _message(event, experiment, stage_index, stage_name, state, detail),
        "next": next_step,
        "review": run.rel(review) if review else None,
        "report": REPORT_FILE,
    }


def _decision(run: Run, entry: LogEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "decision": entry.decision,
        "summary": entry.summary,
        "override": entry.override,
        "reason": entry.reason,
        "eval_id": entry.eval_id,
        **(entry.eval or {}),
    }
    if continuations := entry_continuations(entry):  # time limits, preemptions
        out["continuations"] = continuations
        out["continued"] = continued_note(continuations)
    record = history.find(run.paths.history, entry.eval_id) if entry.eval_id else None
    for key in RECORD_KEYS:
        if record is not None and record.get(key) is not None:
            out[key] = record[key]
    return out


def _message(
    event: str,
    experiment: str | None,
    stage_index: int,
    stage_name: str | None,
    state: Any,
    detail: str | None,
) -> str:
    stage = f"stage {stage_index + 1} {stage_name}"
    return {
        "blocked": f"curriculum blocked: {state.blocked_reason}",
        "done": "curriculum done: every stage passed",
        "passed": f"{experiment} passed {stage}",
        "failed": f"{experiment} failed {stage}; the run retries it",
        "attempt_error": f"{experiment}: attempt error: {detail}",
        "interrupted": f"run interrupted ({detail}) during {experiment or 'start-up'}",
    }.get(event, event)


def _next(run: Run, event: str) -> str:
    if event in ("blocked", "done", "attempt_error"):  # the run stops: what the user does
        # A decision's news is queued with its Committed event: it tells what follows.
        action = next_action(run.state, [s.name for s in run.config.stages], in_commit=True)
        return describe(action, run.command)
    if event == "interrupted":
        return f"`{run.command()}` resumes where it stopped"
    return "nothing: the run goes on"
