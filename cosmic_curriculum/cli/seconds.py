"""The typer side of ``defaults.seconds_problem``: a callback that keeps a timeout option in its
range (``defaults.TIMEOUT_RANGES``), so ``inf``, ``nan`` and ``1e308`` are usage errors."""

from __future__ import annotations

from collections.abc import Callable

import typer

from cosmic_curriculum.defaults import seconds_problem


def seconds_callback(kind: str) -> Callable[[float | None], float | None]:
    """A typer ``callback`` for an option of seconds of ``kind`` (None passes: unset)."""

    def check(value: float | None) -> float | None:
        if value is not None:
            problem = seconds_problem(value, kind)
            if problem is not None:
                raise typer.BadParameter(problem)
        return value

    return check
