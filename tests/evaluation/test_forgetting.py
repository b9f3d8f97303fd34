"""The gate against forgetting's pure rules: the correction, the sign test, each
comparison's verdict, their combination with the previous comparison, the config."""

from __future__ import annotations

import math
from typing import Any

import pytest

from cosmic_curriculum.core.decisions import judge_comparisons
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.evaluation.forgetting import (
    combined,
    comparison_settings,
    corrected_beta,
    judge_comparison,
    sign_test_critical,
    sign_test_p,
)
from cosmic_curriculum.workspace.config import CurriculumConfig, GateSettings

MARGIN = GateSettings()
SPRT = GateSettings(rule="sprt")
BOTH = GateSettings(rule=("threshold", "sprt"), target=0.9)


@pytest.mark.parametrize(
    ("settings", "m", "beta", "rule"),
    [
        (SPRT, 1, 0.05, "sprt"),  # one earlier bot: the stage's own beta
        (SPRT, 2, 0.025, "sprt"),
        (SPRT, 4, 0.0125, "sprt"),
        (GateSettings(rule="sprt", beta=0.1), 5, 0.02, "sprt"),
        (MARGIN, 3, 0.05 / 3, "margin"),  # the sign test's level; margin has no beta
        (BOTH, 2, 0.025, "sprt"),  # threshold judges the reference only
    ],
)
def test_each_comparison_gets_beta_over_m(
    settings: GateSettings, m: int, beta: float, rule: str
) -> None:
    assert corrected_beta(settings, m) == pytest.approx(beta)
    played = comparison_settings(settings, m)
    assert played.rule == rule
    assert played.beta == pytest.approx(beta if rule == "sprt" else settings.beta)
    assert played.alpha == settings.alpha and played.gap == settings.gap


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (0, 0, 1.0),  # no decisive game: no evidence
        (0, 1, 0.5),
        (0, 5, 1 / 32),
        (1, 5, 7 / 64),
        (3, 3, 42 / 64),
        (5, 0, 1.0),
        (40, 60, sum(math.comb(100, k) for k in range(41)) / 2**100),
    ],
)
def test_sign_test_is_the_exact_binomial_tail(wins: int, losses: int, p: float) -> None:
    assert sign_test_p(wins, losses) == pytest.approx(p, rel=1e-12)


def test_the_sign_test_is_exact_for_many_games_and_quick() -> None:
    for wins, losses in ((450, 550), (49_000, 51_000), (3, 1_000)):
        n = wins + losses
        exact = sum(math.comb(n, k) for k in range(wins + 1)) / 2**n if n < 2_000 else None
        p = sign_test_p(wins, losses)
        if exact is not None:
            assert p == pytest.approx(exact, rel=1e-9)
        assert 0.0 <= p < 0.03
    # the normal tail agrees at 100,000 games (z = -6.32)
    assert sign_test_p(49_000, 51_000) == pytest.approx(
        0.5 * math.erfc((50_000 - 49_000.5) / math.sqrt(25_000) / math.sqrt(2)), rel=0.05
    )


def test_critical_values_are_the_largest_failing_win_counts() -> None:
    table = sign_test_critical(12, 0.025)
    for n, cutoff in enumerate(table):
        assert all(sign_test_p(w, n - w) <= 0.025 for w in range(cutoff + 1))
        assert cutoff == n or sign_test_p(cutoff + 1, n - cutoff - 1) > 0.025
    assert table[:7] == [-1, -1, -1, -1, -1, -1, 0]  # 0-6 is the first p (1/64) <= 0.025


def _counts(wa: int, wb: int, d: int, **extra: Any) -> dict[str, Any]:
    return {"wins_a": wa, "wins_b": wb, "draws": d, "episodes": wa + wb + d} | extra


@pytest.mark.parametrize(
    ("settings", "m", "record", "verdict", "rule"),
    [
        # margin stages: the sign test at beta/m, whatever margin verdict the record has
        (MARGIN, 1, _counts(0, 5, 5), "fail", "sign"),  # p 1/32 <= 0.05
        (MARGIN, 2, _counts(0, 5, 5), "pass", "sign"),  # 1/32 > 0.025: not clear
        (MARGIN, 2, _counts(3, 4, 13, gate={"verdict": "fail", "rule": "margin"}), "pass", "sign"),
        (MARGIN, 1, _counts(10, 10, 0), "pass", "sign"),
        # sprt stages: the evaluator's own verdict under the corrected SPRT ...
        (SPRT, 2, _counts(1, 1, 0, gate={"verdict": "fail", "rule": "sprt"}), "fail", "sprt"),
        # ... else the SPRT at beta/m on the counts, episodes as the cap
        (SPRT, 2, _counts(0, 20, 0), "fail", "sprt"),
        (SPRT, 2, _counts(20, 0, 0), "pass", "sprt"),
        (SPRT, 1, {"episodes": 4, "successes": 4}, "fail", "forgetting"),  # no counts
    ],
)
def test_a_comparisons_verdict(
    settings: GateSettings, m: int, record: dict[str, Any], verdict: str, rule: str
) -> None:
    decision = judge_comparison(settings, m, record)
    assert (decision.verdict, decision.rule) == (verdict, rule)


def test_the_sprt_bound_moves_with_the_correction() -> None:
    # 4-0 in decisive games, no draws: LLR ~ -2.98 — past ln(0.05/0.95) = -2.94 only
    decision = judge_comparison(SPRT, 1, _counts(0, 12, 0))
    lower = decision.stats["llr_bounds"][0]
    assert lower == pytest.approx(math.log(0.05 / 0.95))
    two = judge_comparison(SPRT, 2, _counts(0, 12, 0))
    assert two.stats["llr_bounds"][0] == pytest.approx(math.log(0.025 / 0.95))


PASS = {"against_stage": 0, "bot": "bots/a.json", "verdict": "pass", **_counts(5, 5, 0)}
FAIL = {"against_stage": 1, "bot": "bots/b.json", "verdict": "fail", **_counts(0, 9, 1)}


@pytest.mark.parametrize(
    ("previous", "comparisons", "verdict", "said"),
    [
        ("pass", [], "pass", "prev"),  # against = "previous", or no earlier bot
        ("fail", [], "fail", "prev"),  # failed its reference: none were played
        ("pass", [PASS], "pass", "prev; against earlier stages: stage 1 (bots/a.json)"),
        ("pass", [PASS, FAIL], "fail", "⇒ fail (a clear regression against stage 2)"),
        ("pass", [FAIL], "fail", "stage 2 (bots/b.json): 0–9 (1 draws), score 0.05 → fail"),
        ("fail", [PASS], "fail", "⇒ fail"),
    ],
)
def test_the_combination(
    previous: str, comparisons: list[dict[str, Any]], verdict: str, said: str
) -> None:
    got, summary = combined(previous, "prev", [{"score": 0.05} | c for c in comparisons])
    assert got == verdict and summary.startswith("prev") and said in summary


def test_the_core_lists_each_comparison_with_its_tags() -> None:
    record = _counts(0, 10, 0, id="ev-1", against_stage=0, comparisons_planned=2)
    record |= {"against_experiment": "curric-s1-a", "against_bot": "bots/curric-s1-a.json"}
    [figures] = judge_comparisons(MARGIN, [record])
    assert figures["against_stage"] == 0 and figures["bot"] == "bots/curric-s1-a.json"
    assert figures["eval_id"] == "ev-1" and figures["m"] == 2 and figures["beta"] == 0.025
    assert figures["verdict"] == "fail" and figures["p_value"] == pytest.approx(2**-10)
    assert figures["gap_ci95"][1] == 1.0 and (figures["wins_a"], figures["wins_b"]) == (0, 10)


def test_against_previous_keeps_every_config_hash() -> None:
    plain = CurriculumConfig(stages=[{"name": "a"}])
    written = CurriculumConfig(stages=[{"name": "a"}], gate={"against": "previous"})
    assert written.config_hash() == plain.config_hash() == "949c08139eec5376"
    assert "against" not in plain.stage_definitions()[0]["gate"]
    every = CurriculumConfig(stages=[{"name": "a", "gate": {"against": "all"}}])
    assert every.stage_definitions()[0]["gate"]["against"] == "all"
    assert every.config_hash() != plain.config_hash()


@pytest.mark.parametrize(
    ("gate", "wanted"),
    [
        ({"against": "everything"}, "against"),
        ({"against": "all", "rule": "threshold", "target": 0.9}, "has no head-to-head rule"),
    ],
)
def test_bad_against_is_one_line(tmp_path: Any, gate: dict[str, Any], wanted: str) -> None:
    from cosmic_curriculum.workspace.config_file import load_config

    body = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in gate.items())
    path = tmp_path / "stages.toml"
    path.write_text(f'[gate]\n{body}\n[[stages]]\nname = "a"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert wanted in str(caught.value) and "\n" not in str(caught.value)


def test_an_sprt_comparison_undecided_at_the_cap_passes() -> None:
    # 7-13 over a cap of 20: the stage's own SPRT fails it there (LLR -0.89 < 0) ...
    settings = GateSettings(rule="sprt", max_episodes=20)
    own = judge_comparison(settings, 2, _counts(7, 13, 0))
    assert own.verdict == "pass" and own.stats["undecided_at_cap"] is True
    assert own.summary.endswith("→ pass (undecided at the cap)")
    # ... and a record whose evaluator wrote that fail is read the same way
    stored = _counts(7, 13, 0, gate={"verdict": "fail", "rule": "sprt", "summary": "x → fail",
                                     "stats": {"decided_at_cap": True}})  # fmt: skip
    assert judge_comparison(settings, 2, stored).verdict == "pass"
    # a clear regression (the lower bound reached) still fails
    assert judge_comparison(settings, 2, _counts(0, 20, 0)).verdict == "fail"
