"""The built-in evaluation of a Gymnasium stage: candidate and reference on the same fresh
episode seeds (envs/evaluate.py), judged by the stage's gate, which may stop once it has
decided (every rule but margin alone)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.resume import BuiltinBot, Reference, reference_label
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.evaluation.gate import GateSettings


def env_evaluation(
    run: Run,
    candidate: Path,
    reference: Reference,
    settings: GateSettings,
    seed: int,
    progress: Callable[[int, int], None],
    extra: dict[str, Any],
    k: int | None,
) -> dict[str, Any]:
    """The built-in evaluator of a Gymnasium stage; the gate judges its record after
    (margin alone plays its episodes; sprt, threshold and several rules stop once the
    gate has decided: any rule failed, or all passed)."""
    from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env
    from cosmic_curriculum.envs.evaluate import Reference as EnvReference
    from cosmic_curriculum.evaluation.gate import decide

    # a program plays with the env's spaces (envs/program_player.py)
    played: EnvReference
    if isinstance(reference, BuiltinBot) and reference.name == RANDOM:
        played = RANDOM
    elif isinstance(reference, BuiltinBot):  # preflight refuses search:N for a Gymnasium stage
        raise BotError(f"reference {reference}: it cannot play a Gymnasium stage")
    else:
        played = reference
    episodes = settings.planned_episodes

    def decided(counts: dict[str, Any]) -> bool:
        wins = (counts["wins_a"], counts["wins_b"], counts["draws"])
        verdict = decide(
            settings,
            *wins,
            planned_episodes=episodes,
            successes=counts["successes"],
            returns=counts["returns"],
        ).verdict
        return verdict != "continue"

    labels = {"candidate": run.rel(candidate), "reference": reference_label(run, reference)}
    return evaluate_env(
        candidate,
        played,
        history_path=run.paths.history,
        episodes=episodes,
        seed=seed,
        success_return=settings.success_return,
        deterministic=settings.deterministic,
        stop=None if settings.rules == ("margin",) else decided,
        on_progress=progress,
        extra={**extra, **labels},
    )
