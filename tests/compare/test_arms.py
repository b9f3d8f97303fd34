"""The arms' pure rules: names, plans at the curriculum's total, seeds, budgets, and the
trained bots an arm's league may name."""

from __future__ import annotations

import pytest

from cosmic_curriculum.compare.arms import (
    budget_problem,
    check_seeds,
    checkpoint_every,
    parse_arms,
    plan_arm,
    run_name,
    spent_offsets,
    trained_bot_problem,
)

NAMES = ["5x5", "6x6", "8x8"]
STEPS = [40, 60, 100]


@pytest.mark.parametrize(
    ("arm", "stages", "timesteps"),
    [
        ("curriculum", (0, 1, 2), (40, 60, 100)),
        ("last-stage", (2,), (200,)),
        ("stage:5x5", (0,), (200,)),
        ("stage:6x6", (1,), (200,)),
    ],
)
def test_every_arm_trains_the_curriculums_total(
    arm: str, stages: tuple[int, ...], timesteps: tuple[int, ...]
) -> None:
    plan = plan_arm(arm, NAMES, STEPS)
    assert (plan.stages, plan.timesteps, plan.total) == (stages, timesteps, 200)
    assert plan.single == (len(stages) == 1)


@pytest.mark.parametrize(
    ("arm", "says"),
    [
        ("stage:9x9", "names no stage of stages.toml; its stages are 5x5, 6x6, 8x8"),
        ("fixed", "unknown arm 'fixed'; the arms are curriculum, last-stage, stage:NAME"),
        ("stage:", "names no stage"),
    ],
)
def test_an_arm_that_is_not_one_is_named_with_the_known_ones(arm: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        plan_arm(arm, NAMES, STEPS)


@pytest.mark.parametrize(
    ("text", "arms", "says"),
    [
        ("curriculum,last-stage", ["curriculum", "last-stage"], None),
        (" curriculum , stage:6x6 ,", ["curriculum", "stage:6x6"], None),
        (",", None, "name at least one arm"),
        ("curriculum,curriculum", None, "'curriculum' is named twice"),
    ],
)
def test_arms_option(text: str, arms: list[str] | None, says: str | None) -> None:
    if says is None:
        assert parse_arms(text) == arms
    else:
        with pytest.raises(ValueError, match=says):
            parse_arms(text)


@pytest.mark.parametrize(
    ("own", "problem"),
    [
        ([40, 60, 100], None),
        ([40, None, 100], "stage '6x6' has no timesteps of its own"),
    ],
)
def test_arms_share_a_budget_only_when_every_stage_has_timesteps(
    own: list[int | None], problem: str | None
) -> None:
    said = budget_problem(NAMES, own)
    assert said is None if problem is None else problem in (said or "")


@pytest.mark.parametrize(
    ("seeds", "says"),
    [
        ([0, 1, 2], None),
        ([], "at least one seed"),
        ([0, 1, 0], "0 is given twice"),
        ([-1], "-1 is out of range"),
        ([2**31], "out of range"),
        (list(range(33)), "at most 32"),
    ],
)
def test_seeds(seeds: list[int], says: str | None) -> None:
    if says is None:
        assert check_seeds(seeds, 32, 2**31 - 1) == seeds
    else:
        with pytest.raises(ValueError, match=says):
            check_seeds(seeds, 32, 2**31 - 1)


@pytest.mark.parametrize(
    ("total", "points", "every"), [(1000, 10, 100), (5, 10, 1), (1_450_000, 6, 241_666)]
)
def test_checkpoints_along_the_way(total: int, points: int, every: int) -> None:
    assert checkpoint_every(total, points) == every


def test_names_and_offsets() -> None:
    assert run_name("stage:8x8", 2) == "stage-8x8-s2"
    assert run_name("curriculum", 0) == "curriculum-s0"
    assert spent_offsets([40, 60, 60, 100]) == [0, 40, 100, 160]


LEAGUE = ["vs-random", "self-play", "league"]


@pytest.mark.parametrize(
    ("arm", "flags", "says"),
    [
        # A league naming the earlier stages' bots: the curriculum arm makes them.
        ("curriculum", ["--league-bot", "bots/curric-s1-vs-random.json"], None),
        ("curriculum", ["--league-bot=bots/curric-s2-self-play-retry1.json"], None),
        ("curriculum", ["--opponent-mode", "bot:bots/curric-s2-self-play.json"], None),
        ("last-stage", ["--league-bot", "random", "--league-bot", "search:1"], None),
        ("last-stage", ["--league-bot", "bots/veteran.json"], None),  # copied into the arm
        ("last-stage", ["--league-bot", "/abs/bots/curric-s1-x.json"], None),
        (
            "last-stage",
            ["--league-bot", "bots/curric-s1-vs-random.json"],
            "stage 'league' has --league-bot bots/curric-s1-vs-random.json, a bot that arm "
            "last-stage does not train before it (it makes none)",
        ),
        (
            "stage:league",
            ["--opponent-mode", "bot:bots/curric-s2-self-play.json"],
            "--opponent-mode bots/curric-s2-self-play.json",
        ),
        (
            "curriculum",
            ["--league-bot", "bots/curric-s3-league.json"],
            "(it makes bots/curric-s1-vs-random.json, bots/curric-s2-self-play.json)",
        ),
        (
            "curriculum",
            ["--league-bot", "bots/curric-s1-vs-random-old.json"],
            "does not train before it",
        ),
        # A lesson from an earlier stage's bot is the same kind of reference.
        ("curriculum", ["--clone-teacher", "bots/curric-s2-self-play.json"], None),
        ("last-stage", ["--clone-teacher", "search:2"], None),
        (
            "last-stage",
            ["--clone-teacher=bots/curric-s2-self-play.json"],
            "stage 'league' has --clone-teacher bots/curric-s2-self-play.json, a bot that "
            "arm last-stage does not train before it",
        ),
    ],
)
def test_an_arms_league_names_only_bots_the_arm_trains_first(
    arm: str, flags: list[str], says: str | None
) -> None:
    plan = plan_arm(arm, LEAGUE, [10, 20, 30])
    stage_flags = [["--opponent-mode", "random"], ["--opponent-mode", "self_play"], flags]
    problem = trained_bot_problem(plan, LEAGUE, stage_flags)
    assert problem is None if says is None else says in (problem or ""), problem
