"""What a decision leaves behind: the review of a block, the curves, the git commit and push.

Commits carry only our paths (``git commit -- paths``): the state, the history, every logged
attempt's bot (JSON and ONNX), log and curve, the reviews and the curriculum's curves. A
failed commit is a warning (progress is on disk and committed later); a failed push is
retried after the next commit.
"""

from __future__ import annotations

from pathlib import Path

from cosmic_curriculum import fsio, history, vcs
from cosmic_curriculum.curriculum import transitions as t
from cosmic_curriculum.curriculum.context import REASON_HINT, Run
from cosmic_curriculum.errors import GitError
from cosmic_curriculum.layout import committed_paths

COMMIT_PREFIX = "chore(training): curriculum progress after"


def persist(run: Run) -> None:
    """``decided`` → ``committed``: review a block, plot a finished curriculum, commit."""
    experiment = run.flight.experiment
    extra = [run.paths.bot(experiment), run.paths.log(experiment)]
    if run.state.status == "blocked":
        extra.append(write_review(run))
    if run.state.status == "done":
        plot_curves(run)
    run.record(t.Committed())
    if run.use_git:
        commit(run, experiment, extra=extra)
    fsio.fault_point("committed")


def commit(run: Run, experiment: str, extra: list[Path] | None = None, quiet: bool = False) -> None:
    """Commit our files (state, history, every attempt's bot and log, reviews); push."""
    paths = run.paths
    files: list[Path] = [paths.state, paths.history, *(extra or [])]
    for entry in run.state.log:
        exp = entry.experiment
        files += [paths.root / p for p in committed_paths(exp)]
    files += paths.reviews()
    files.append(paths.curves)
    if experiment == "catch-up":
        experiment = run.state.log[-1].experiment if run.state.log else "start"
    message = f"{COMMIT_PREFIX} {experiment}"
    unique = list(dict.fromkeys(p for p in files if p.exists()))
    try:
        committed = vcs.commit_paths(run.ws, unique, message)
    except GitError as exc:
        run.reporter.warning(f"{exc}; progress is saved on disk and will be committed later")
        return
    if committed and not quiet:
        run.reporter.info(f"committed: {message}")
    if not run.opts.push or not (committed or run.state.push_pending):
        return
    ok, detail = vcs.push(run.ws, timeout=run.opts.push_timeout)
    if ok != (not run.state.push_pending):
        run.record(t.PushTried(ok))
    if not ok:
        run.reporter.warning(
            f"{detail}; training goes on, the push is retried after the next commit"
        )


def write_review(run: Run) -> Path:
    from cosmic_curriculum.report import review_markdown

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
        force_command=run.command("--force-retry", REASON_HINT),
        skip_command=run.command("--skip-to-next-stage", REASON_HINT),
        reason=run.state.blocked_reason or "",
    )
    fsio.atomic_write_text(path, text)
    return path


def plot_curves(run: Run) -> None:
    from cosmic_curriculum.curves import plot_curriculum

    try:
        out = plot_curriculum(run.paths.logs, run.paths.curves)
    except Exception as exc:  # plotting must never cost a finished curriculum
        run.reporter.warning(f"could not plot the learning curves: {exc}")
        return
    if out:
        run.reporter.info(f"learning curves: {out}")


def blocked_message(run: Run) -> str:
    i = run.state.stage_index
    stage = run.config.stages[i] if i < len(run.config.stages) else None
    review = run.rel(run.paths.review(stage.name)) if stage else ""
    return (
        f"curriculum blocked: {run.state.blocked_reason or 'stage failed too often'}; "
        f"review {review}, then continue with "
        f"`{run.command('--force-retry', REASON_HINT)}` or "
        f"`{run.command('--skip-to-next-stage', REASON_HINT)}`"
    )
