"""Every user-facing default, in one place.

The config models of `stages.toml`, the command-line options and their help text read
their defaults from here, so a default is changed once and the help always says it.

This module imports nothing from the package and nothing heavy: every layer may import
it (`status` among them, which must start fast).
"""

from __future__ import annotations

from typing import Final

# --- the regression gate (stages.toml's eval_episodes, regression_margin, [gate]) ------

# The gate's rule: the fixed-episode margin test (docs/GATES.md).
GATE_RULE: Final = "margin"
# Episodes the margin rule plays (an even number: seat-swapped pairs); also what an
# ungated `evaluate` plays.
EVAL_EPISODES: Final = 100
# The margin rule fails iff the reference's win rate exceeds the candidate's by this.
REGRESSION_MARGIN: Final = 0.15
# SPRT: the win-rate gap of the regression it must tell from equal strength.
SPRT_GAP: Final = 0.25
# SPRT: rate of passing a regression of SPRT_GAP.
SPRT_ALPHA: Final = 0.05
# SPRT: rate of failing an equal candidate.
SPRT_BETA: Final = 0.05
# SPRT: episodes played at most before it decides on the sign of the LLR.
SPRT_MAX_EPISODES: Final = 400
# Seat-swapped pairs the evaluator plays per vectorised batch.
SPRT_BATCH_PAIRS: Final = 5
# When SPRT looks: after every pair ("pair") or only after whole batches ("batch").
SPRT_CHECK: Final = "pair"

# --- `gate simulate` (the gate's error rates by Monte Carlo) ---------------------------

# The rules simulated when no --rule is given.
SIMULATE_RULES: Final = ("margin", "sprt")
# Monte Carlo trials per (rule, draw rate, true strength) cell.
SIMULATE_TRIALS: Final = 20_000
# Draw rates simulated, comma-separated (as the option takes them).
SIMULATE_DRAW_RATES: Final = "0,0.2,0.4"
# SPRT's outcome model: "pentanomial" (pair scores) or "trinomial" (single games).
SIMULATE_MODEL: Final = "pentanomial"
# True win-rate gap of the "worse" candidate (SPRT_GAP: its pass rate is then alpha).
SIMULATE_WORSE_GAP: Final = 0.25
# True win-rate advantage of the "better" candidate.
SIMULATE_BETTER_GAP: Final = 0.10

# --- bots -------------------------------------------------------------------------------

# An external bot (`exec:` program): seconds it may take for one answer.
BOT_TIMEOUT_SECONDS: Final = 10.0
