"""The threshold gate: its SPRT on successes, the return rule, its settings, records
judged by the core, the built-in evaluator on the arena, and its simulator."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cosmic_curriculum.core.decisions import gate_verdict
from cosmic_curriculum.errors import EvaluationError, StateError
from cosmic_curriculum.evaluation import evaluate, threshold
from cosmic_curriculum.evaluation.gate import GateSettings, decide
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.config import CurriculumConfig

REPO = Path(__file__).resolve().parents[1]
GATE = GateSettings(rule="threshold", target=0.9)  # p0 0.85, p1 0.95, bounds ±ln 19
UP = math.log(0.95 / 0.85)  # LLR of one success: +0.1112
DOWN = math.log(0.05 / 0.15)  # LLR of one failure: -1.0986 (= -ln 3)


def _success(successes: int, episodes: int, gate: GateSettings = GATE) -> Any:
    return decide(gate, successes, episodes - successes, 0)


# (successes, episodes, verdict): hand-computed from ln 19 = 2.944 and the steps above.
SPRT_CASES = [
    (26, 26, "continue"),  # 26 · 0.1112 = 2.892 < 2.944
    (27, 27, "pass"),  # 27 · 0.1112 = 3.003: k = ceil(ln 19 / ln(0.95/0.85)) = 27
    (0, 2, "continue"),  # -2.197
    (0, 3, "fail"),  # -3.296: a 5%-success stream fails after 3 failures
    (1, 4, "fail"),  # 0.111 - 3.296
    (30, 31, "continue"),  # 30 · 0.1112 - 1.0986 = 2.238
    (37, 38, "pass"),  # 37 · 0.1112 - 1.0986 = 3.017
]


@pytest.mark.parametrize(("successes", "episodes", "verdict"), SPRT_CASES)
def test_success_sprt_hand_computed(successes: int, episodes: int, verdict: str) -> None:
    d = _success(successes, episodes)
    assert d.verdict == verdict
    assert d.stats["llr"] == pytest.approx(successes * UP + (episodes - successes) * DOWN)
    assert d.stats["llr_bounds"] == pytest.approx([-math.log(19), math.log(19)])


def test_a_stream_at_target_stays_undecided_until_the_cap() -> None:
    # 9 successes then 1 failure, repeated: a 0.9 stream. Its LLR drifts down by
    # 10·(0.9·UP + 0.1·DOWN) = -0.0975 a block and never leaves (-2.944, 2.944) in 200.
    gate = GateSettings(rule="threshold", target=0.9, max_episodes=200)
    successes = 0
    for n in range(1, 201):
        successes += n % 10 != 0
        d = _success(successes, n, gate)
        assert d.verdict == ("continue" if n < 200 else "fail"), n
    assert d.stats["decided_at_cap"] is True
    assert d.stats["llr"] == pytest.approx(20 * (9 * UP + DOWN))  # -1.95 < 0: fail


def test_at_the_cap_a_non_negative_llr_passes() -> None:
    gate = GateSettings(rule="threshold", target=0.9, max_episodes=20)
    # 19 of 20: 19 · 0.1112 - 1.0986 = +1.015 >= 0
    assert _success(19, 20, gate).verdict == "pass"
    assert _success(18, 20, gate).verdict == "fail"  # 2.002 - 2.197 < 0


def test_summary_and_stats_carry_counts_interval_target_llr_and_verdict() -> None:
    d = _success(27, 27)
    assert d.rule == "threshold"
    assert d.summary == (
        "27/27 successes (100%, 95% 88%–100%) vs target 0.9 (SPRT 0.85 vs 0.95), "
        "LLR +3.00 in (−2.94, +2.94) → pass"
    )
    s = d.stats
    assert (s["successes"], s["episodes"], s["target"], s["verdict"]) == (27, 27, 0.9, "pass")
    assert s["success_rate_ci95"][0] == pytest.approx(0.8754, abs=1e-4)  # Wilson
    json.dumps(d.to_dict(), allow_nan=False)


def test_successes_default_to_the_candidates_wins_and_may_be_given() -> None:
    assert decide(GATE, 27, 0, 0).verdict == "pass"
    assert decide(GATE, 0, 0, 27, successes=27).verdict == "pass"  # draws, all successes
    assert decide(GATE, 0, 0, 3).verdict == "fail"  # draws are not successes: -3.296


# --- the return rule ------------------------------------------------------------------

RETURN = GateSettings(rule="threshold", measure="return", target=0.6)


@pytest.mark.parametrize(
    ("returns", "target", "verdict"),
    [
        ([1.0] * 9, 0.5, "continue"),  # under min_episodes (10)
        ([1.0] * 10, 0.5, "pass"),  # interval [1, 1] excludes 0.5
        ([0.0] * 10, 0.5, "fail"),
        # mean 0.5, SD √(25/99) = 0.5025: at 90 the half-width is 0.104 (high 0.604),
        # at 100 it is 0.0985 (high 0.5985 < 0.6)
        ([0.0, 1.0] * 45, 0.6, "continue"),
        ([0.0, 1.0] * 50, 0.6, "fail"),
    ],
)
def test_return_rule(returns: list[float], target: float, verdict: str) -> None:
    gate = GateSettings(rule="threshold", measure="return", target=target)
    d = decide(gate, 0, 0, len(returns), returns=returns)
    assert d.verdict == verdict
    assert d.stats["mean_return"] == pytest.approx(sum(returns) / len(returns))
    assert d.stats["target"] == target


def test_return_rule_at_the_cap_passes_iff_the_mean_reaches_the_target() -> None:
    gate = GateSettings(rule="threshold", measure="return", target=0.5, max_episodes=20)
    assert decide(gate, 0, 0, 20, returns=[0.0, 1.0] * 10).verdict == "pass"  # 0.5 >= 0.5
    assert decide(gate, 0, 0, 20, returns=[0.0, 0.98] * 10).verdict == "fail"
    d = decide(gate, 0, 0, 20, returns=[0.0, 1.0] * 10)
    assert "mean return 0.5 over 20 episodes" in d.summary and d.summary.endswith("→ pass")


# --- settings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rule": "threshold"}, 'rule = "threshold" needs a target: set target = 0.9'),
        ({"rule": "threshold", "target": 0.97}, "choose a target in (0.05, 0.95)"),
        ({"rule": "threshold", "target": 0.0}, "choose a target in (0.05, 0.95)"),
        ({"rule": "threshold", "target": 0.5, "delta": 0.0}, "greater than 0"),
        ({"rule": "threshold", "target": 0.9, "measure": "reward"}, "'success' or 'return'"),
    ],
)
def test_threshold_settings_are_checked(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=r"target|delta|measure") as exc:
        GateSettings(**fields)
    assert message in str(exc.value)


def test_valid_threshold_settings() -> None:
    assert GateSettings(rule="threshold", target=0.5, delta=0.1).target == 0.5
    assert GateSettings(rule="threshold", measure="return", target=250).target == 250.0
    assert GateSettings(target=2.0).rule == "margin"  # only the threshold rule reads it


def test_config_error_is_one_line_naming_the_key(tmp_path: Path) -> None:
    from cosmic_curriculum.errors import ConfigError
    from cosmic_curriculum.workspace.config_file import load_config

    path = tmp_path / "stages.toml"
    path.write_text('[[stages]]\nname = "a"\n[stages.gate]\nrule = "threshold"\ntarget = 0.97\n')
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    text = str(exc.value)
    assert "\n" not in text
    assert f"{path}:5: stages[0].gate.target: target 0.97 with delta 0.05" in text
    assert "(got 0.97)" in text


def test_the_new_fields_leave_existing_config_hashes_alone() -> None:
    # Pinned before the threshold rule existed: a workspace's stages stay "unchanged".
    assert CurriculumConfig(stages=[{"name": "a"}]).config_hash() == "949c08139eec5376"
    sprt = CurriculumConfig(stages=[{"name": "a"}], gate={"rule": "sprt"})
    assert sprt.config_hash() == "fe510023c5e89e9c"
    th = CurriculumConfig(stages=[{"name": "a"}], gate={"rule": "threshold", "target": 0.9})
    assert th.stage_definitions()[0]["gate"]["target"] == 0.9


def test_deterministic_is_in_the_definition_only_when_written() -> None:
    plain = CurriculumConfig(stages=[{"name": "a"}])
    assert plain.stage_gate(0).deterministic is True  # the env evaluator's behaviour so far
    assert "deterministic" not in plain.stage_definitions()[0]["gate"]
    sampled = CurriculumConfig(stages=[{"name": "a", "gate": {"deterministic": False}}])
    assert sampled.stage_gate(0).deterministic is False
    assert sampled.stage_definitions()[0]["gate"]["deterministic"] is False
    assert sampled.config_hash() != plain.config_hash() == "949c08139eec5376"


# --- records judged by the core -------------------------------------------------------


def _record(**extra: Any) -> dict[str, Any]:
    base = {"wins_a": 0, "wins_b": 0, "draws": 40, "episodes": 40}
    return base | extra


@pytest.mark.parametrize(
    ("settings", "record", "verdict"),
    [
        (GATE, _record(successes=40), "pass"),
        (GATE, _record(successes=2), "fail"),  # the 5% bot
        (GATE, {"wins_a": 40, "wins_b": 0, "draws": 0, "episodes": 40}, "pass"),  # wins
        (GATE, _record(successes=36), "fail"),  # 36/40 at the cap: LLR -0.39 < 0
        (RETURN, _record(returns=[1.0] * 40), "pass"),
        (RETURN, _record(returns=[0.0, 1.0] * 20), "fail"),  # mean 0.5 < 0.6 at the cap
        (RETURN, _record(), "fail"),  # no returns: failed, and the summary says why
        (GATE, _record(successes=0, gate={"verdict": "pass", "summary": "own"}), "pass"),
    ],
)
def test_gate_verdict_on_threshold_records(
    settings: GateSettings, record: dict[str, Any], verdict: str
) -> None:
    got, summary = gate_verdict(settings, record)
    assert got == verdict
    assert summary.endswith(verdict) or summary == "own" or "no 'returns'" in summary


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"successes": 41}, "'successes' must be a whole number in [0, episodes = 40]"),
        ({"successes": True}, "'successes' must be a whole number"),
        ({"returns": [1.0]}, "'returns' must be a list of one return per episode (40)"),
        ({"returns": [1.0] * 39 + ["x"]}, "'returns' must hold finite numbers"),
        ({"returns": [1.0] * 39 + [math.nan]}, "'returns' must hold finite numbers"),
    ],
)
def test_history_checks_the_threshold_keys(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(StateError, match=r"^new evaluation record: ") as exc:
        history.validate_record(_record(**extra), "new evaluation record")
    assert message in str(exc.value)


# --- the built-in evaluator on the arena ----------------------------------------------


def _arena(candidate: str, reference: str, tmp_path: Path) -> dict[str, Any]:
    return evaluate.run_evaluation(
        REPO / "bots" / f"{candidate}.json",
        REPO / "bots" / f"{reference}.json",
        history_path=tmp_path / "h.json",
        gate=GATE,
        seed=0,
    )


def test_arena_strong_bot_passes_threshold_and_the_inert_one_fails(tmp_path: Path) -> None:
    strong = _arena("veteran", "inert", tmp_path)
    assert strong["gate"]["verdict"] == "pass"
    # asked after every pair: 27 straight wins decide, so the 14th pair (28 episodes)
    assert strong["gate"]["stats"]["successes"] == strong["wins_a"] == strong["episodes"] == 28
    inert = _arena("inert", "rookie", tmp_path)
    assert inert["gate"]["verdict"] == "fail"
    assert inert["episodes"] == 4  # 3 failures decide; the 2nd pair holds the 3rd
    assert inert["gate"]["summary"].startswith("0/4 successes")


def test_arena_refuses_the_return_measure() -> None:
    with pytest.raises(EvaluationError, match='gate measure = "return": the built-in evaluator'):
        evaluate.plan(RETURN)
    assert evaluate.plan(GATE) == (GATE.max_episodes // 2, GATE.batch_pairs)


# --- the simulator --------------------------------------------------------------------


def test_simulated_error_rates_stay_near_alpha_and_beta() -> None:
    rows = {r["strength"]: r for r in threshold.simulate_table(GATE, 2000, weak=0.05)}
    assert rows["target - delta"]["pass_rate"] < 0.08  # alpha = 0.05
    assert rows["target + delta"]["fail_rate"] < 0.08  # beta = 0.05
    assert rows["weak"]["pass_rate"] == 0.0
    assert 4.0 <= rows["weak"]["mean_episodes"] < 4.2  # two pairs mostly hold 3 failures
    assert 0.2 < rows["target"]["pass_rate"] < 0.8
    again = threshold.simulate_table(GATE, 2000, weak=0.05)
    assert [r["pass_rate"] for r in again] == [r["pass_rate"] for r in rows.values()]


def test_simulator_decides_as_decide_does() -> None:
    # Every episode a success: the SPRT passes at 27 (looking each episode) or 28 (pairs).
    sim = threshold.simulate_success(GATE, true_p=1.0, trials=10, check_every=1)
    assert (sim.pass_rate, sim.mean_episodes) == (1.0, 27.0)
    assert threshold.simulate_success(GATE, true_p=1.0, trials=10).mean_episodes == 28.0
    ret = threshold.simulate_return(RETURN, true_mean=5.0, sd=0.1, trials=50)
    assert (ret.pass_rate, ret.mean_episodes) == (1.0, 10.0)


def test_cli_gate_simulate_threshold(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cosmic_curriculum.cli import app

    out = tmp_path / "rows.json"
    args = ["gate", "simulate", "--rule", "threshold", "--target", "0.9", "--trials", "200"]
    result = CliRunner().invoke(app, [*args, "--json", str(out)], terminal_width=160)
    assert result.exit_code == 0, result.output
    assert "Threshold gate Monte Carlo" in result.output
    rows = json.loads(out.read_text())
    assert [r["strength"] for r in rows] == ["target - delta", "target", "target + delta", "weak"]
    missing = CliRunner().invoke(app, ["gate", "simulate", "--rule", "threshold"])
    assert missing.exit_code == 2
    assert "needs a target" in missing.output and len(missing.output.strip().splitlines()) == 1
