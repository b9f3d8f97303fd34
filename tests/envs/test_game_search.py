"""`search:N` (envs/game_search.py): it takes a win in one, blocks a loss in one at depth
2, leaves the game it searches untouched, shares what does not pickle (drawing), refuses
in one line a game whose state it cannot copy, and a full-depth search is perfect play on
tic-tac-toe: it never loses, in either seat, and against itself every game is a draw."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from cosmic_curriculum.envs.game_evaluate import evaluate_game
from cosmic_curriculum.envs.game_players import RandomGamePlayer
from cosmic_curriculum.envs.game_search import Search, SearchPlayer, state_key
from cosmic_curriculum.envs.game_table import GameTable
from cosmic_curriculum.envs.pettingzoo import game_info, make_game
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.errors import EvaluationError
from tests.envs.game_helpers import CONNECT_FOUR, RPS, TICTACTOE, random_game_bot


def position(moves: list[int]) -> object:
    game = make_game(CONNECT_FOUR)
    game.reset(seed=0)
    for move in moves:
        game.step(move)
    return game


def test_search_takes_a_win_in_one_and_blocks_a_loss_in_one() -> None:
    info = game_info(CONNECT_FOUR)
    rngs = [np.random.default_rng(i) for i in range(6)]
    # the first player has three in the bottom row (columns 1-3): 0 or 4 wins
    won = position([3, 3, 2, 2, 1, 1])
    picked = {Search(info, depth).choose(won, rng) for depth in (1, 3) for rng in rngs}
    assert picked <= {0, 4} and picked == {0, 4}  # either win, at random
    # the second player has three in column 3: the first must block it there
    threat = position([0, 3, 6, 3, 6, 3])
    assert {Search(info, 2).choose(threat, rng) for rng in rngs} == {3}
    assert len({Search(info, 1).choose(threat, rng) for rng in rngs}) > 1  # blind at 1


def test_best_moves_are_every_move_choose_picks_among() -> None:
    info = game_info(CONNECT_FOUR)
    won = position([3, 3, 2, 2, 1, 1])
    assert Search(info, 2).best_moves(won) == [0, 4]  # either win
    threat = position([0, 3, 6, 3, 6, 3])
    assert Search(info, 2).best_moves(threat) == [3]  # the one block
    assert Search(info, 1).best_moves(threat) == list(range(7))  # blind at depth 1
    before = state_key(threat.unwrapped, {})
    Search(info, 3).best_moves(threat)
    assert state_key(threat.unwrapped, {}) == before


def test_the_searched_game_is_left_as_it_was() -> None:
    info = game_info(CONNECT_FOUR)
    game = position([3, 3])
    search = Search(info, 3)
    before = state_key(game.unwrapped, {})
    search.choose(game, np.random.default_rng(0))
    assert state_key(game.unwrapped, {}) == before and search.nodes > 0
    game.step(2)  # still playable
    assert not game.terminations[game.agent_selection]


def test_full_depth_search_is_perfect_play_on_tictactoe() -> None:
    info = game_info(TICTACTOE)
    table = GameTable(TICTACTOE, info, 24, 100)
    perfect = SearchPlayer(info, 9, seed=1)  # its table of positions serves every game
    players = (perfect, RandomGamePlayer(9, seed=2))
    rngs = (np.random.default_rng(0), np.random.default_rng(1))
    first = [0, 1] * 12  # the search in either seat, 12 games each
    games = table.play(players, ("search:9", "random"), first, list(range(24)), False, rngs)
    outcomes = [g.outcome for g in games]
    assert -1 not in outcomes and outcomes.count(1) >= 12  # random loses most games
    mirror = (perfect, perfect)  # the search against itself, ties broken at random
    games = table.play(mirror, ("a", "b"), [0, 1] * 3, list(range(6)), False, rngs)
    assert [g.outcome for g in games] == [0] * 6 and all(g.moves == 9 for g in games)
    table.close()


def test_search_plays_a_game_with_drawing_resources_and_refuses_one_it_cannot_copy(
    tmp_path: Path,
) -> None:
    # rock-paper-scissors keeps a pygame surface: shared by the copies, not pickled
    bot = tmp_path / "rps.json"
    save_env_bot(random_game_bot(RPS, seed=0), bot)
    record = evaluate_game(bot, "search:2", history_path=tmp_path / "h.json", episodes=4,
                           seed=0, deterministic=False)  # fmt: skip
    assert record["episodes"] == 4 and record["reference"] == "search:2"
    game = position([3])
    game.unwrapped.hook = lambda: None  # a part of the state that does not pickle
    with pytest.raises(EvaluationError) as caught:
        Search(game_info(CONNECT_FOUR), 2).choose(game, np.random.default_rng(0))
    message = str(caught.value)
    assert message.startswith("search:N cannot copy the state of the game 'raw_env'")
    assert "play it against random or a bot" in message and "\n" not in message


def test_a_wrapped_game_is_copied_through_its_wrappers_and_searched_alike() -> None:
    from cosmic_curriculum.envs.game_search import copy_game, shared_parts

    info = game_info(CONNECT_FOUR)
    game = position([3, 3, 2])  # PettingZoo's own wrappers around the game
    copy = copy_game(game, shared_parts(game))
    assert type(copy) is type(game) and copy.unwrapped is not game.unwrapped
    assert copy.unwrapped.action_spaces is game.unwrapped.action_spaces  # shared, not copied
    copy.step(2)
    assert copy.unwrapped.board != game.unwrapped.board  # the original is untouched
    assert game.agent_selection != copy.agent_selection
    for depth in (1, 2, 3):  # the wrappers' copies choose as the bare game's, seed by seed
        wrapped = [Search(info, depth, plain=False).choose(game, np.random.default_rng(i))
                   for i in range(4)]  # fmt: skip
        bare = [Search(info, depth).choose(game, np.random.default_rng(i)) for i in range(4)]
        assert wrapped == bare
