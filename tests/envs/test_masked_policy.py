"""Masked env bots (a pettingzoo game's legal moves): never an illegal move, greedy or
sampled; the key round-trips; an all-illegal mask and a misplaced key are one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from cosmic_curriculum.envs.policy import load_env_bot, save_env_bot
from cosmic_curriculum.errors import BotError
from tests.envs.game_helpers import CONNECT_FOUR, random_game_bot


def test_masked_moves_are_legal_greedy_and_sampled(tmp_path: Path) -> None:
    bot = random_game_bot(CONNECT_FOUR, seed=3)
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, (500, 6, 7, 2)).astype(np.int8)
    mask = rng.random((500, 7)) < 0.3
    mask[np.arange(500), rng.integers(0, 7, 500)] = True  # at least one legal move a row
    greedy = bot.act(obs, deterministic=True, mask=mask)
    assert mask[np.arange(500), greedy].all()
    # the greedy move is the best legal logit, not the best logit
    logits = np.where(mask, bot.outputs(obs), -np.inf)
    assert (greedy == logits.argmax(axis=1)).all()
    unmasked = bot.act(obs, deterministic=True)
    assert (unmasked != greedy).any()
    sampled = bot.act(obs, deterministic=False, rng=np.random.default_rng(1), mask=mask)
    assert mask[np.arange(500), sampled].all()
    assert (sampled != greedy).any()  # sampling does sample
    # a single legal move is always the one played
    only = np.zeros((500, 7), bool)
    only[:, 4] = True
    assert (bot.act(obs, deterministic=False, rng=rng, mask=only) == 4).all()


def test_masked_sampling_follows_the_legal_softmax() -> None:
    bot = random_game_bot(CONNECT_FOUR, seed=5)
    obs = np.zeros((20_000, 6, 7, 2), np.int8)
    mask = np.zeros((20_000, 7), bool)
    mask[:, [1, 3, 6]] = True
    moves = bot.act(obs, deterministic=False, rng=np.random.default_rng(2), mask=mask)
    logits = bot.outputs(obs[:1])[0, [1, 3, 6]]
    want = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    got = np.array([(moves == m).mean() for m in (1, 3, 6)])
    assert np.abs(got - want).max() < 0.02


def test_the_key_round_trips_and_bad_uses_are_one_line(tmp_path: Path) -> None:
    bot = random_game_bot(CONNECT_FOUR)
    path = tmp_path / "bot.json"
    save_env_bot(bot, path)
    document = json.loads(path.read_text())
    assert document["action_mask"] is True
    assert load_env_bot(path).action_mask
    with pytest.raises(BotError, match="allows no move"):
        bot.act(np.zeros((2, 6, 7, 2)), mask=np.array([[True] * 7, [False] * 7]))
    document["env"] = {"kind": "gymnasium", "id": "CartPole-v1"}
    path.write_text(json.dumps(document))
    with pytest.raises(BotError, match="action_mask needs an env of kind 'pettingzoo'"):
        load_env_bot(path)
    document["action_mask"] = "yes"
    path.write_text(json.dumps(document))
    with pytest.raises(BotError, match="action_mask must be true or false"):
        load_env_bot(path)
