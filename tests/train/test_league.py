"""The league's pure rules, table-driven: the pool, PFSP weights, sampling from a saved rng."""

from __future__ import annotations

import json

import pytest

from cosmic_curriculum.train.league import (
    LeagueRule,
    LeagueState,
    Record,
    from_json,
    new_state,
    outcome_of,
    peek,
    pfsp_weights,
    recorded,
    sample,
    to_json,
    win_rate,
    with_snapshot,
)


@pytest.mark.parametrize(
    ("pool", "name", "size", "kept", "evicted"),
    [
        ((), "snap-0", 3, ("snap-0",), ()),
        (("a", "b"), "c", 3, ("a", "b", "c"), ()),
        (("a", "b", "c"), "d", 3, ("b", "c", "d"), ("a",)),
        (("a", "b", "c"), "d", 1, ("d",), ("a", "b", "c")),
        (("a", "b"), "a", 2, ("b", "a"), ()),  # a repeated name becomes the newest
    ],
)
def test_pool_is_bounded_and_evicts_the_oldest(pool, name, size, kept, evicted) -> None:
    table = {p: Record(1, 0, 0) for p in pool}
    state, out = with_snapshot(LeagueState(pool, table), name, size)
    assert (state.pool, out) == (kept, evicted)
    assert set(state.table) == set(pool) - set(evicted)


def test_pool_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="pool size 0"):
        with_snapshot(LeagueState(), "a", 0)


@pytest.mark.parametrize(
    ("record", "rate"),
    [
        (None, 0.5),
        (Record(0, 0, 0), 0.5),
        (Record(1, 0, 0), 5 / 6),
        (Record(0, 0, 1), 1 / 6),
        (Record(0, 2, 0), 0.5),
        (Record(99, 0, 1), 99.25 / 100.5),
    ],
)
def test_win_rate_has_half_a_game_of_prior(record, rate) -> None:
    assert win_rate(record) == pytest.approx(rate)


@pytest.mark.parametrize(
    ("weighting", "expected"),
    [
        # p = 5/6 against "beaten", 1/6 against "strong", 1/2 against "new"
        ("hard", ((1 / 6) ** 2, (5 / 6) ** 2, 0.25)),
        ("linear", (1 / 6, 5 / 6, 0.5)),
        ("variance", (5 / 36, 5 / 36, 0.25)),
    ],
)
def test_pfsp_weights(weighting, expected) -> None:
    table = {"beaten": Record(1, 0, 0), "strong": Record(0, 0, 1)}
    weights = pfsp_weights(("beaten", "strong", "new"), table, weighting)
    total = sum(expected)
    assert weights == pytest.approx(tuple(e / total for e in expected))
    assert sum(weights) == pytest.approx(1.0)


def _counts(state: LeagueState, rule: LeagueRule, n: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _ in range(n):
        name, state = sample(state, rule)
        counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (LeagueRule(3, "latest"), {"c": 1.0}),
        (LeagueRule(3, "uniform"), {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}),
        # hard PFSP: a beaten 9-0 weighs (0.25/9.5)^2, b 0-9 (9.25/9.5)^2, c unplayed 0.25
        (LeagueRule(3, "pfsp", "hard"), {"a": 0.0006, "b": 0.791, "c": 0.2085}),
        (LeagueRule(3, "latest", bots=("random",), bot_share=0.25), {"c": 0.75, "random": 0.25}),
    ],
)
def test_sampling_follows_the_rule(rule, expected) -> None:
    table = {"a": Record(9, 0, 0), "b": Record(0, 0, 9)}
    state = LeagueState(("a", "b", "c"), table, new_state(7).rng)
    counts = _counts(state, rule, 4000)
    for name, share in expected.items():
        assert counts.get(name, 0) / 4000 == pytest.approx(share, abs=0.03)
    assert set(counts) <= set(expected)


def test_an_empty_pool_plays_the_fixed_bots_and_no_opponent_is_an_error() -> None:
    rule = LeagueRule(2, "pfsp", bots=("random",), bot_share=0.0)
    assert sample(new_state(0), rule)[0] == "random"
    with pytest.raises(ValueError, match="no opponent"):
        sample(new_state(0), LeagueRule(2, "pfsp"))


def test_the_rng_state_is_data_a_saved_league_draws_the_same_opponents() -> None:
    rule = LeagueRule(4, "pfsp", bots=("random", "search:1"), bot_share=0.3)
    state = new_state(3)
    for i in range(5):
        state, _ = with_snapshot(state, f"snap-{i}", 4)
        name, state = sample(state, rule)
        state = recorded(state, rule, name, outcome_of([1.0, -1.0, 0.0][i % 3]))
    saved = json.loads(json.dumps(to_json(state)))  # through the file's text
    again = from_json(saved)
    assert again == state
    assert peek(again, rule, 20) == peek(state, rule, 20)
    assert len(set(peek(state, rule, 20))) > 1  # it really samples


@pytest.mark.parametrize(
    ("name", "outcome", "expected"),
    [
        ("snap-1", "win", Record(2, 0, 0)),
        ("snap-1", "draw", Record(1, 1, 0)),
        ("random", "loss", Record(0, 0, 1)),
        ("snap-gone", "win", None),  # evicted during its game: not recorded
    ],
)
def test_results_update_the_table(name, outcome, expected) -> None:
    rule = LeagueRule(2, "pfsp", bots=("random",), bot_share=0.5)
    state = LeagueState(("snap-1",), {"snap-1": Record(1, 0, 0)}, new_state(0).rng)
    assert recorded(state, rule, name, outcome).table.get(name) == expected


@pytest.mark.parametrize(
    ("document", "fault"),
    [
        ([], "not a league file"),
        ({"format": "cosmic-league/1", "pool": "a", "table": {}, "rng": {}}, "pool must"),
        ({"format": "cosmic-league/1", "pool": [], "table": {"a": [1, 2]}, "rng": {}}, "table"),
        ({"format": "cosmic-league/1", "pool": [], "table": {"a": [1, -2, 0]}, "rng": {}}, "table"),
        ({"format": "cosmic-league/1", "pool": [], "table": {}, "rng": {"x": 1}}, "rng is not"),
    ],
)
def test_a_bad_league_file_names_the_field(document, fault) -> None:
    with pytest.raises(ValueError, match=fault):
        from_json(document)
