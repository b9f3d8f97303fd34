"""The arms of a comparison, pure: their names, the stages each trains, the budget split.

An arm is a curriculum of its own: ``curriculum`` is the stages as configured (gates
included); ``last-stage`` is the last stage alone from scratch with the curriculum's total
timesteps; ``stage:NAME`` is stage NAME alone with that total. Every arm's budget is the
curriculum's total, so the stages must each have a number of timesteps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

CURRICULUM = "curriculum"
LAST_STAGE = "last-stage"
STAGE_PREFIX = "stage:"
KNOWN = (CURRICULUM, LAST_STAGE, f"{STAGE_PREFIX}NAME")


@dataclass(frozen=True)
class ArmPlan:
    """What one arm trains: ``stages`` (indices into the parent's stages, in order) with
    ``timesteps`` each; ``total`` is their sum (every arm's is the same)."""

    name: str
    stages: tuple[int, ...]
    timesteps: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.timesteps)

    @property
    def single(self) -> bool:
        """One stage at the whole budget (no gate between stages to pass)."""
        return len(self.stages) == 1


def parse_arms(text: str) -> list[str]:
    """``--arms a,b,c`` as names (blanks dropped); an arm named twice and an empty list refused."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"--arms {text!r}: name at least one arm ({', '.join(KNOWN)})")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"--arms {text!r}: {name!r} is named twice; name each arm once")
        seen.add(name)
    return names


def plan_arm(name: str, stage_names: Sequence[str], stage_timesteps: Sequence[int]) -> ArmPlan:
    """Arm ``name`` over the parent's stages, at the curriculum's total timesteps.
    ``stage_timesteps``: each stage's timesteps as the parent trains them."""
    total = sum(stage_timesteps)
    if name == CURRICULUM:
        return ArmPlan(name, tuple(range(len(stage_names))), tuple(stage_timesteps))
    if name == LAST_STAGE:
        return ArmPlan(name, (len(stage_names) - 1,), (total,))
    if name.startswith(STAGE_PREFIX):
        stage = name[len(STAGE_PREFIX) :]
        if stage not in stage_names:
            raise ValueError(
                f"--arms: {name!r} names no stage of stages.toml; its stages are "
                f"{', '.join(stage_names)}"
            )
        return ArmPlan(name, (list(stage_names).index(stage),), (total,))
    raise ValueError(f"--arms: unknown arm {name!r}; the arms are {', '.join(KNOWN)}")


def budget_problem(stage_names: Sequence[str], own_timesteps: Sequence[int | None]) -> str | None:
    """Why the arms cannot share one budget (None: they can): the total is the sum of the
    stages' own timesteps, so a stage that takes its timesteps from elsewhere (none of its
    own) leaves the total to a default nobody chose for this comparison."""
    for name, steps in zip(stage_names, own_timesteps, strict=True):
        if steps is None:
            return (
                f"stages.toml: stage {name!r} has no timesteps of its own, so the arms' common "
                "budget (the sum of the stages' timesteps) is not defined; give every stage "
                "`timesteps = N`"
            )
    return None


def check_seeds(seeds: Sequence[int], most: int, largest: int) -> list[int]:
    """The trainer seeds of every arm: at least one, at most ``most``, each in
    0..``largest``, none twice."""
    if not seeds:
        raise ValueError("--seeds: give at least one seed, e.g. --seeds 0 1 2")
    if len(seeds) > most:
        raise ValueError(f"--seeds: {len(seeds)} seeds; at most {most} (each is a whole training)")
    for seed in seeds:
        if not 0 <= seed <= largest:
            raise ValueError(f"--seeds: {seed} is out of range; a seed is 0..{largest}")
    if len(set(seeds)) != len(seeds):
        dup = next(s for s in seeds if list(seeds).count(s) > 1)
        raise ValueError(f"--seeds: {dup} is given twice; each seed once")
    return list(seeds)


def run_name(arm: str, seed: int) -> str:
    """The sub-workspace of ``arm`` with ``seed``: ``stage:NAME`` becomes ``stage-NAME``."""
    return f"{arm.replace(':', '-')}-s{seed}"


def checkpoint_every(total: int, points: int) -> int:
    """Timesteps between the step checkpoints an arm keeps for the measure along the way:
    about ``points`` of them over the total (at least 1 timestep apart)."""
    return max(1, total // max(1, points))


def spent_offsets(timesteps: Sequence[int]) -> list[int]:
    """The timesteps an arm had spent when each of its trainings started, in order."""
    offsets, spent = [], 0
    for steps in timesteps:
        offsets.append(spent)
        spent += steps
    return offsets


def _bot_flags(flags: Sequence[str]) -> list[tuple[str, str]]:
    """(option, bot) of each bot a stage's flags name: ``--league-bot X`` (or ``=X``),
    ``--opponent-mode bot:X`` and the lesson's ``--clone-teacher X``."""
    found = []
    for i, flag in enumerate(flags):
        option, _, value = flag.partition("=")
        if not value and i + 1 < len(flags):
            value = flags[i + 1]
        if option in ("--league-bot", "--clone-teacher"):
            found.append((option, value))
        elif option == "--opponent-mode" and value.startswith("bot:"):
            found.append((option, value.removeprefix("bot:")))
    return found


def trained_bot_problem(
    plan: ArmPlan, stage_names: Sequence[str], stage_flags: Sequence[Sequence[str]]
) -> str | None:
    """Why ``plan`` cannot train (None: it can): a stage's flags name a trained bot,
    ``bots/curric-s<N>-<stage>.json``, that no earlier stage of this arm makes (an arm
    trains only its own stages, and the parent's trained bots are not copied into it)."""
    from pathlib import PurePath

    from cosmic_curriculum.workspace.layout import experiment_name

    for position, index in enumerate(plan.stages):
        earlier = [experiment_name(k, stage_names[plan.stages[k]], 0) for k in range(position)]
        for option, bot in _bot_flags(stage_flags[index]):
            path = PurePath(bot)
            trained = len(path.parts) >= 2 and path.parts[-2] == "bots"
            if path.is_absolute() or not (trained and path.name.startswith("curric-")):
                continue
            stem = path.name.removesuffix(".json")
            if any(re.fullmatch(rf"{re.escape(e)}(-retry\d+)?", stem) for e in earlier):
                continue
            made = ", ".join(f"bots/{e}.json" for e in earlier) or "none"
            return (
                f"stages.toml: stage {stage_names[index]!r} has {option} {bot}, a bot that "
                f"arm {plan.name} does not train before it (it makes {made}); name random, "
                "search:N or a bot file of your own there, or leave the arm out of --arms"
            )
    return None
