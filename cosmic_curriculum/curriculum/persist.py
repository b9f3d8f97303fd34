"""What a decision leaves behind: the review of a block, the curves, the git commit and push.

Commits carry only our paths (:func:`vcs.commit_paths`): the state, the history, every
logged attempt's bot (JSON and ONNX twin), log (its last MiB when longer) and curve, the
reviews and the curriculum's curves. A decision is committed before it is announced; from
the moment its state says ``committed`` until git has it, ``.cosmic-curriculum.commit``
says the commit is owed (`status` shows it, the next run makes it first). A failed commit
is a warning (progress is on disk; each later commit retries it), but a run whose last
commit failed ends with :class:`UncommittedError` (exit 3), never as a clean success; a
failed push is retried after the next commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cosmic_curriculum.bots.onnx_meta import twin_problem
from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.next_action import REASON_HINT, describe, next_action
from cosmic_curriculum.curriculum import notify
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.errors import (
    BlockedError,
    CurriculumError,
    GitError,
    UncommittedError,
)
from cosmic_curriculum.reports import markdown as report_md
from cosmic_curriculum.system import fsio
from cosmic_curriculum.vcs import repo as vcs
from cosmic_curriculum.workspace import history, pending_commit
from cosmic_curriculum.workspace.layout import committed_paths, experiment_name

COMMIT_PREFIX = "chore(training): curriculum progress after"


def persist(run: Run) -> None:
    """``decided`` → ``committed``: review a block, plot a finished curriculum, commit,
    then notify: nothing is announced that git does not have yet."""
    experiment = run.flight.experiment
    extra = [run.paths.bot(experiment), run.paths.log(experiment)]
    for c in run.flight.candidates or []:  # every candidate's bot and log, chosen or not
        extra += [run.paths.root / p for p in committed_paths(c.experiment)]
    if run.state.status == "blocked":
        extra.append(write_review(run))
    if run.state.status == "done":
        plot_curves(run)
    report_md.refresh(run)
    queued = notify.queue_decision(run)  # saved with the phase: sent exactly once
    if run.use_git:
        # The phase says `committed` before git has the commit (the commit carries that
        # state): this file says it is owed until it is made, for `status` and the next run.
        pending_commit.mark(run.paths, decision_message(experiment))
    run.record(t.Committed())
    commit(run, experiment, extra=extra)
    fsio.fault_point("committed")
    if queued:
        notify.deliver(run, only={queued})  # after the commit, never before or during it


def decision_message(experiment: str) -> str:
    return f"{COMMIT_PREFIX} {experiment}"


def catch_up_message(run: Run) -> str:
    """What a catch-up commit carries: the decision whose commit is owed, else the state
    an earlier run left (an attempt interrupted or failed in flight, notifications)."""
    owed = pending_commit.pending(run.paths)
    if owed:
        return owed
    flight = run.state.in_flight
    if flight is not None and flight.phase != "committed":
        how = ", interrupted" if flight.interrupted else ""
        how += ", after an attempt error" if flight.error else ""
        during = f"{flight.experiment} ({flight.phase}{how})"
        return f"chore(training): curriculum progress during {during}"
    if run.opts.force_retry and run.state.status == "in_progress":
        i = run.state.stage_index
        upcoming = experiment_name(i, run.config.stages[i].name, run.state.attempt)
        return f"chore(training): forced retry of stage {i + 1} as {upcoming}"
    return "chore(training): curriculum state an earlier run left uncommitted"


def settle(run: Run) -> None:
    """At the end of a run that stops (done, blocked): commit what changed after its last
    commit (notifications delivered, the push flag), so a run leaves nothing uncommitted."""
    if run.unsettled:
        what = " and ".join(sorted(run.unsettled))
        commit(run, "", quiet=True, message=f"chore(training): curriculum state after {what}")


def commit(
    run: Run,
    experiment: str,
    extra: list[Path] | None = None,
    quiet: bool = False,
    message: str | None = None,
) -> None:
    """Commit our files (state, history, every attempt's bot and log, reviews); push.
    ``experiment`` names the decision (``"catch-up"``: what an earlier run left, with
    :func:`catch_up_message`), unless ``message`` is given. Nothing to do when the run
    goes on without git (its preflight said why, once)."""
    if not run.use_git:
        return
    paths = run.paths
    files: list[Path] = [paths.state, paths.history, *(extra or [])]
    for entry in run.state.log:
        exp = entry.experiment
        files += [paths.root / p for p in committed_paths(exp)]
    files += paths.reviews()
    files.append(paths.curves)
    files += paths.report_files()
    if message is None:
        catch_up = experiment == "catch-up"
        message = catch_up_message(run) if catch_up else decision_message(experiment)
    unique = [p for p in dict.fromkeys(files) if p.exists() and not stale_twin(run, p)]
    check_git(run, unique)
    try:
        committed = vcs.commit_paths(run.ws, unique, message)
    except GitError as exc:
        run.commit_failure = str(exc)
        run.reporter.warning(
            f"{exc}; progress is saved on disk; the commit is retried at the next decision"
        )
        return
    run.commit_failure = None
    run.unsettled.clear()
    pending_commit.clear(paths)  # git has every file of ours as it is on disk
    if committed and not quiet:
        run.reporter.info(f"committed: {message}")
    if not run.opts.push or not (committed or run.state.push_pending):
        return
    ok, detail = vcs.push(run.ws, timeout=run.opts.push_timeout)
    if ok != (not run.state.push_pending):
        run.record(t.PushTried(ok))
        run.unsettled.add("the push")
    if not ok:
        run.reporter.warning(
            f"{detail}; training goes on, the push is retried after the next commit"
        )


def stale_twin(run: Run, path: Path) -> bool:
    """A ``bots/<exp>.onnx`` that is not the twin of ``bots/<exp>.json`` (its metadata
    names another file or other bytes): left out of the commit, said once per run."""
    if path.suffix != ".onnx":
        return False
    problem = twin_problem(path)
    if problem is not None and path not in run.warned_twins:
        run.warned_twins.add(path)
        bot = run.rel(path.with_suffix(".json"))
        run.reporter.warning(
            f"{run.rel(path)} {problem}, so it is not the twin of {bot}: left out of the "
            f"commit; rewrite it with `cosmic-curriculum export-onnx {bot}` or remove it"
        )
    return problem is not None


def check_git(run: Run, paths: Iterable[Path] = ()) -> None:
    """Once per run, before its first commit (so before any training): refuse symlinked
    paths we commit and say once that the workspace commits into an enclosing repository
    (:func:`vcs.check_workspace`). Raises GitError."""
    if run.git_checked:
        return
    layout = run.paths
    committed = (layout.state, layout.history, layout.bots, layout.logs, *paths)
    warning = vcs.check_workspace(run.ws, committed)
    run.git_checked = True
    if warning is not None:
        run.reporter.warning(warning)


def final_error(run: Run) -> CurriculumError | None:
    """How a run that stopped stepping ends: blocked (exit 1), or its results not
    committed (exit 3, the next run's catch-up commit retries), or None (success)."""
    uncommitted = (
        f"the results are saved in {run.ws} but not committed to git ({run.commit_failure})"
        if run.commit_failure
        else None
    )
    if run.state.status == "blocked":
        note = f"; note: {uncommitted}" if uncommitted else ""
        return BlockedError(blocked_message(run) + note)
    if uncommitted:
        return UncommittedError(
            f"curriculum {run.state.status}, but {uncommitted}; fix that and re-run "
            f"`{run.command()}`, which commits them first"
        )
    return None


def write_review(run: Run) -> Path:
    from cosmic_curriculum.reports.review import review_markdown

    i = run.state.stage_index
    stage = run.config.stages[i]
    path = run.paths.review(stage.name)
    records = {str(r.get("id")): r for r in history.load(run.paths.history)}
    text = review_markdown(
        stage_number=i + 1,
        stage_name=stage.name,
        entries=run.state.stage_log(i),
        records=records,
        margin=run.config.stage_gate(i).regression_margin,
        gate=run.config.stage_gate(i),
        force_command=run.command("--force-retry", REASON_HINT),
        skip_command=run.command("--skip-to-next-stage", REASON_HINT),
        reason=run.state.blocked_reason or "",
    )
    fsio.atomic_write_text(path, text)
    return path


def plot_curves(run: Run) -> None:
    from cosmic_curriculum.reports.curves import plot_curriculum

    try:
        out = plot_curriculum(run.paths.logs, run.paths.curves)
    except Exception as exc:  # plotting must never cost a finished curriculum
        run.reporter.warning(f"could not plot the learning curves: {exc}")
        return
    if out:
        run.reporter.info(f"learning curves: {out}")


def blocked_message(run: Run) -> str:
    # Said once the blocking decision is committed (or on a later run).
    action = next_action(run.state, [s.name for s in run.config.stages], in_commit=True)
    reason = run.state.blocked_reason or "stage failed too often"
    return f"curriculum blocked: {reason}; {describe(action, run.command)}"
