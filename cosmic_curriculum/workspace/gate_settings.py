"""`GateSettings`: how a stage's candidate is judged (`[gate]`, `[stages.gate]`).

Kept apart from the rest of `stages.toml`'s models (``config.py`` re-exports it) so each
stays short; numpy-free, so `status` starts fast. docs/GATES.md explains every rule.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from cosmic_curriculum.defaults import (
    ENV_EVAL_DETERMINISTIC,
    EVAL_EPISODES,
    GAME_EVAL_DETERMINISTIC,
    GATE_AGAINST,
    GATE_RULE,
    REGRESSION_MARGIN,
    SPRT_ALPHA,
    SPRT_BATCH_PAIRS,
    SPRT_BETA,
    SPRT_CHECK,
    SPRT_GAP,
    SPRT_MAX_EPISODES,
    THRESHOLD_DELTA,
    THRESHOLD_MEASURE,
    THRESHOLD_MIN_EPISODES,
)

RuleName = Literal["margin", "sprt", "threshold"]
# The rules that ask "is the candidate not worse than its reference?" (one is enough).
HEAD_TO_HEAD = ("margin", "sprt")

# The threshold rule's own fields: left out of a margin or sprt gate's stage definition,
# so adding them changed no existing workspace's config hash.
THRESHOLD_FIELDS = frozenset({"measure", "target", "delta", "min_episodes"})


class GateSettings(BaseModel):
    """How a stage's candidate is judged against its reference.

    ``margin`` (the reference rule): play ``episodes`` episodes and fail iff the
    reference's win rate exceeds the candidate's by at least ``regression_margin``.
    ``sprt``: a sequential test that stops as soon as it can tell "no regression" (score
    0.5) from a regression of ``gap`` in win rate (score ``0.5 - gap/2``), with error
    rates ``alpha`` (passing such a regression) and ``beta`` (failing an equal
    candidate), capped at ``max_episodes`` (then fail iff the LLR is negative).
    ``threshold``: pass only when the bot reaches ``target``: on ``measure = "success"``
    a Wald SPRT of success probability ``target - delta`` (H0, passed with rate
    ``alpha``) against ``target + delta`` (H1, failed with rate ``beta``), capped at
    ``max_episodes``; on ``measure = "return"`` a sequential normal interval of the mean
    return (after ``min_episodes``), approximate error rates.
    The evaluator plays ``batch_pairs`` seat-swapped pairs per vectorised call. With
    ``check = "pair"`` (default) the test looks after every pair of a batch, in order,
    and pairs after the deciding one are discarded (simulated games are cheap; the error
    rates and episode counts are those of a per-pair test); with ``check = "batch"`` it
    looks only after whole batches (for costly games: fewer looks, 13-20% more episodes
    at 5 pairs). See docs/GATES.md for measured error rates.
    """

    # Strict like the rest of stages.toml: "0.5" or true is not a number (ints are
    # accepted where a float is meant, by `_floats_accept_ints`).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    # Each description is also the help text of the `gate simulate` option built from
    # the field (cli/gate.py), hence the option names in them.
    # One rule, or several that must all pass (``["threshold", "sprt"]``): each judges the
    # same evaluation's episodes; a list of one is that rule (its config hash too).
    rule: RuleName | tuple[RuleName, ...] = GATE_RULE
    episodes: int = Field(
        EVAL_EPISODES,
        ge=2,
        description="margin: episodes played (even: the evaluator plays pairs).",
    )
    regression_margin: float = Field(
        REGRESSION_MARGIN,
        gt=0.0,
        lt=1.0,
        description="margin: regression_margin (fail iff the reference's win rate exceeds "
        "the candidate's by at least this).",
    )
    gap: float = Field(
        SPRT_GAP, gt=0.0, lt=1.0, description="SPRT: the regression (win-rate gap) of H0."
    )
    alpha: float = Field(
        SPRT_ALPHA,
        gt=0.0,
        lt=0.5,
        description="SPRT: rate of passing a regression of --gap (threshold: a bot at "
        "target - delta).",
    )
    beta: float = Field(
        SPRT_BETA,
        gt=0.0,
        lt=0.5,
        description="SPRT: rate of failing an equal candidate (threshold: a bot at "
        "target + delta).",
    )
    max_episodes: int = Field(
        SPRT_MAX_EPISODES,
        ge=2,
        description="SPRT and threshold: episode cap (even: the evaluator plays pairs).",
    )
    batch_pairs: int = Field(SPRT_BATCH_PAIRS, ge=1, description="Pairs per batch.")
    check: Literal["pair", "batch"] = Field(
        SPRT_CHECK, description="pair or batch (see docs/GATES.md)."
    )
    measure: Literal["success", "return"] = Field(
        THRESHOLD_MEASURE, description="threshold: success (rate) or return (mean)."
    )
    delta: float = Field(
        THRESHOLD_DELTA,
        gt=0.0,
        description="threshold on success: half-width of the indifference band around --target.",
    )
    min_episodes: int = Field(
        THRESHOLD_MIN_EPISODES,
        ge=2,
        description="threshold on return: episodes before the interval may decide.",
    )
    success_return: float | None = Field(
        None,
        description="Gymnasium stages: an episode without info['is_success'] succeeds when "
        "its return reaches this (unset: when it is > 0).",
    )
    deterministic: bool = Field(
        ENV_EVAL_DETERMINISTIC,
        description="Gymnasium stages: the bots take their most likely action (true) or "
        "sample from their policy (false); an evaluation_command gets it as "
        "COSMIC_CURRICULUM_EVAL_DETERMINISTIC=1 or 0.",
    )
    against: Literal["previous", "all"] = Field(
        GATE_AGAINST,
        description="previous: the candidate plays its reference; all: also every earlier "
        "stage's passing bot, failing on a clear regression against any (the gate against "
        "forgetting, its false-fail rate held at beta over those comparisons).",
    )
    # Declared last: its check reads rule, measure and delta (validated before it).
    target: float | None = Field(
        None,
        validate_default=True,
        description="threshold: the success rate (or mean return) the bot must reach.",
    )

    @field_validator("rule", mode="before")
    @classmethod
    def _rule_list(cls, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        rules = list(value)
        if not rules:
            raise ValueError('rule = []: name at least one rule, e.g. rule = "margin"')
        if len(set(rules)) < len(rules):
            raise ValueError(f"rule = {rules}: a rule is named twice; name each once")
        if sum(r in HEAD_TO_HEAD for r in rules) > 1:
            raise ValueError(
                f"rule = {rules}: margin and sprt both test the candidate against its "
                'reference; keep one, e.g. rule = ["threshold", "sprt"]'
            )
        return rules[0] if len(rules) == 1 else tuple(rules)

    @field_validator(
        "regression_margin", "gap", "alpha", "beta", "delta", "success_return", "target",
        mode="before",
    )  # fmt: skip
    @classmethod
    def _floats_accept_ints(cls, value: Any) -> Any:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("against")
    @classmethod
    def _against_needs_head_to_head(cls, value: str, info: ValidationInfo) -> str:
        rule = info.data.get("rule")
        if (
            value == "all"
            and rule is not None
            and not any(r in HEAD_TO_HEAD for r in _as_rules(rule))
        ):
            raise ValueError(
                f'against = "all" plays earlier stages\' bots head to head, but rule = '
                f"{list(_as_rules(rule))} has no head-to-head rule; add one, e.g. "
                'rule = ["threshold", "sprt"], or set against = "previous"'
            )
        return value

    @field_validator("target")
    @classmethod
    def _target_fits_the_rule(cls, value: float | None, info: ValidationInfo) -> float | None:
        rule = info.data.get("rule")
        if rule is None or "threshold" not in _as_rules(rule):
            return value
        if value is None:
            raise ValueError(
                'rule = "threshold" needs a target: set target = 0.9 (the success rate the '
                "bot must reach) or another value"
            )
        delta = info.data.get("delta")
        success = info.data.get("measure", THRESHOLD_MEASURE) == "success"
        if success and delta is not None and not (value - delta > 0.0 and value + delta < 1.0):
            raise ValueError(
                f"target {value:g} with delta {delta:g}: a success rate's band "
                f"target ± delta must lie inside (0, 1); choose a target in "
                f"({delta:g}, {1 - delta:g}) or a smaller delta"
            )
        return value

    @property
    def rules(self) -> tuple[RuleName, ...]:
        """The rules the candidate must pass, in the order written."""
        return _as_rules(self.rule)

    @property
    def rule_label(self) -> str:
        """``"threshold+sprt"``: the rules as one name (records, tables)."""
        return "+".join(self.rules)

    def only(self, rule: RuleName) -> GateSettings:
        """These settings with ``rule`` alone: how each of several rules judges."""
        return self.model_copy(update={"rule": rule})

    @property
    def head_to_head(self) -> bool:
        """Whether a rule compares the candidate with its reference (margin, sprt)."""
        return any(r in HEAD_TO_HEAD for r in self.rules)

    @property
    def planned_episodes(self) -> int:
        """The evaluation's cap: margin's episodes when it is a rule (it decides on all
        of them), else max_episodes (the sequential rules stop sooner once decided)."""
        return self.episodes if "margin" in self.rules else self.max_episodes

    @property
    def check_pairs(self) -> int:
        """Pairs between two looks of the sequential test."""
        return 1 if self.check == "pair" else self.batch_pairs

    def game_deterministic(self) -> bool:
        """A game's action choice: greedy only when the gate says so (two greedy policies
        would replay one game per seat order), else the games' default (sampled)."""
        if "deterministic" in self.model_fields_set:
            return self.deterministic
        return GAME_EVAL_DETERMINISTIC

    def definition(self) -> dict[str, Any]:
        """What identifies this gate in a stage's definition (the config hash)."""
        exclude = set() if "threshold" in self.rules else set(THRESHOLD_FIELDS)
        if self.success_return is None:  # unset: the hashes of gates before the key stay
            exclude.add("success_return")
        if "deterministic" not in self.model_fields_set:  # likewise: only when written
            exclude.add("deterministic")
        if self.against == "previous":  # today's gate, written or not: its hashes stay
            exclude.add("against")
        return self.model_dump(exclude=exclude)


def _as_rules(rule: str | tuple[str, ...]) -> tuple[RuleName, ...]:
    return cast("tuple[RuleName, ...]", (rule,) if isinstance(rule, str) else tuple(rule))
