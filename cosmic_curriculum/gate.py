"""The regression gate: pure decisions from head-to-head counts (no I/O)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GateSettings(BaseModel):
    """How a stage's candidate is judged against its reference.

    ``margin`` (the reference rule): play ``episodes`` episodes and fail iff the
    reference's win rate exceeds the candidate's by at least ``regression_margin``.
    ``sprt``: a sequential test that stops as soon as it can tell "no regression" from a
    regression of ``gap`` in score, with error rates ``alpha``/``beta``, capped at
    ``max_episodes``; it asks after every ``batch_pairs`` seat-swapped pairs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: Literal["margin", "sprt"] = "margin"
    episodes: int = Field(100, ge=2, description="episodes played by the margin rule")
    regression_margin: float = Field(0.15, gt=0.0, lt=1.0)
    gap: float = Field(0.25, gt=0.0, lt=1.0)
    alpha: float = Field(0.05, gt=0.0, lt=0.5)
    beta: float = Field(0.05, gt=0.0, lt=0.5)
    max_episodes: int = Field(400, ge=2)
    batch_pairs: int = Field(5, ge=1)
