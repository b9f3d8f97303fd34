"""The built-in evaluation of a PettingZoo stage: seat-swapped pairs of games
(envs/game_evaluate.py) judged by the stage's gate, which may stop after any pair.

The gate's ``deterministic`` is the bots' greedy play only when the stage's gate sets it
(``GateSettings.game_deterministic``, compare's choice too): a game's default is to sample
(two greedy policies would replay one game in every pair).
The decision the gate reached is the record's ``gate`` (pentanomial SPRT on the pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.resume import BuiltinBot, Reference, reference_label
from cosmic_curriculum.evaluation.gate import GateSettings

Counts = dict[str, Any]


def gate_calls(
    settings: GateSettings,
) -> tuple[int, Callable[[Counts], bool] | None, Callable[[Counts], dict[str, Any]]]:
    """The games a gate plans (the cap of a sequential rule), whether it has decided on
    the counts so far (None for margin alone: it decides on every game), and the decision
    a record carries (on the pairs' scores: SPRT's pentanomial model)."""
    from cosmic_curriculum.evaluation.evaluate import plan
    from cosmic_curriculum.evaluation.gate import decide

    max_pairs, _ = plan(settings)
    episodes = 2 * max_pairs

    def decision(counts: Counts, planned: int) -> Any:
        wins = (counts["wins_a"], counts["wins_b"], counts["draws"])
        return decide(settings, *wins, counts["pair_scores"], planned_episodes=planned)

    def decided(counts: Counts) -> bool:
        return bool(decision(counts, episodes).verdict != "continue")

    def gate_of(counts: Counts) -> dict[str, Any]:
        made = decision(counts, episodes)
        if made.verdict == "continue":  # fewer games than planned: the cap's rule
            made = decision(counts, counts["episodes"])
        return {**made.to_dict(), "settings": settings.model_dump()}

    return episodes, (None if settings.rules == ("margin",) else decided), gate_of


def game_evaluation(
    run: Run,
    candidate: Path,
    reference: Reference,
    settings: GateSettings,
    seed: int,
    progress: Callable[[int, int], None],
    extra: dict[str, Any],
    k: int | None,
) -> dict[str, Any]:
    """The built-in evaluator of a PettingZoo stage; its record carries the gate's
    decision (margin on every game; sprt and threshold stop once the gate has decided)."""
    from cosmic_curriculum.envs.game_evaluate import evaluate_game

    # a program plays with the game's spaces, one seat's view (envs/program_player.py)
    played = reference.name if isinstance(reference, BuiltinBot) else reference
    episodes, decided, gate_of = gate_calls(settings)
    labels = {"candidate": run.rel(candidate), "reference": reference_label(run, reference)}
    record = evaluate_game(
        candidate,
        played,
        history_path=run.paths.history,
        episodes=episodes,
        seed=seed,
        deterministic=settings.game_deterministic(),
        decided=decided,
        gate_of=gate_of,
        on_progress=progress,
        extra={**extra, **labels},
    )
    if "reference_note" in record:  # a search that sees hidden cards or moves
        run.reporter.warning(f"{labels['candidate']}: {record['reference_note']}")
    return record
