"""How often a connect-four bot takes an immediate win and blocks an immediate loss.

The bot plays ``--games`` games against uniform random moves (its seat alternating,
PettingZoo's connect_four_v3, one at a time). At each of its moves the board is checked
by brute force: could it have won at once (a column completing four), and, when not,
could the opponent have won at once next move (a column to block)? The bot's share of
those moves it got right says whether it sees the board's lines, which a score against
``random`` hides (random rarely punishes a missed block).

    python bench/bench_connect4_tactics.py bots/curric-s3-league.json [--greedy]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from pettingzoo.classic import connect_four_v3

from cosmic_curriculum.envs.policy import load_env_bot

ROWS, COLUMNS = 6, 7
LINES = ((0, 1), (1, 0), (1, 1), (1, -1))


def wins(board: np.ndarray, column: int, player: int) -> bool:
    """Whether ``player`` dropping a piece in ``column`` completes four in a line."""
    empty = np.flatnonzero(board[:, column] == 0)
    if empty.size == 0:
        return False
    row = int(empty.max())  # pieces fall to the highest free row index
    for dr, dc in LINES:
        count = 1
        for sign in (1, -1):
            r, c = row + sign * dr, column + sign * dc
            while 0 <= r < ROWS and 0 <= c < COLUMNS and board[r, c] == player:
                count += 1
                r, c = r + sign * dr, c + sign * dc
        if count >= 4:
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bot", type=Path)
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--greedy", action="store_true", help="its most likely move")
    args = parser.parse_args()
    bot = load_env_bot(args.bot)
    rng = np.random.default_rng(args.seed)
    counts = {"wins": 0, "won": 0, "threats": 0, "blocked": 0, "lost": 0}
    for game in range(args.games):
        env = connect_four_v3.env()
        env.reset(seed=args.seed * 100_003 + game)
        seat = env.agents[game % 2]
        board = np.zeros((ROWS, COLUMNS), int)
        for agent in env.agent_iter():
            obs, reward, ended, cut, _ = env.last()
            if ended or cut:
                counts["lost"] += agent == seat and reward < 0
                env.step(None)
                continue
            legal = obs["action_mask"].astype(bool)
            me = 1 if agent == env.possible_agents[0] else 2
            if agent == seat:
                move = int(bot.act(obs["observation"][None], args.greedy, rng, legal[None])[0])
                winning = [c for c in range(COLUMNS) if legal[c] and wins(board, c, me)]
                blocking = [c for c in range(COLUMNS) if legal[c] and wins(board, c, 3 - me)]
                if winning:
                    counts["wins"] += 1
                    counts["won"] += move in winning
                elif blocking:
                    counts["threats"] += 1
                    counts["blocked"] += move in blocking
            else:
                move = int(rng.choice(np.flatnonzero(legal)))
            board[int(np.flatnonzero(board[:, move] == 0).max()), move] = me
            env.step(move)
    play = "greedy" if args.greedy else "sampled"
    print(f"{args.bot} ({play}) against random, {args.games} games: lost {counts['lost']}")
    print(
        f"  immediate wins taken: {counts['won']}/{counts['wins']} ({share(counts, 'won', 'wins')})"
    )
    print(
        f"  immediate losses blocked: {counts['blocked']}/{counts['threats']} "
        f"({share(counts, 'blocked', 'threats')})"
    )


def share(counts: dict[str, int], part: str, whole: str) -> str:
    return f"{counts[part] / counts[whole]:.2f}" if counts[whole] else "none"


if __name__ == "__main__":
    main()
