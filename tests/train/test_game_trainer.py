"""`train-env` on pettingzoo games: a short real MaskablePPO training writes a masked bot
exact to the model's masked greedy move, each opponent mode fills the league's table,
bad input is one line, and kill -9 / SIGTERM then a continuation restore the same league."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.envs.pettingzoo import game_info, make_game, split_observation
from cosmic_curriculum.envs.policy import load_env_bot
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.train import league as rules
from cosmic_curriculum.train.env_run import parse_settings
from cosmic_curriculum.train.game_run import train_game
from cosmic_curriculum.train.league_settings import LeagueOptions, league_settings
from cosmic_curriculum.workspace.env_config import EnvSpec

pytest.importorskip("sb3_contrib")
pytest.importorskip("pettingzoo")

TICTACTOE = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.tictactoe_v3")
RPS = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.rps_v2")
SMALL = {"n_steps": 32, "batch_size": 64, "n_epochs": 1}


def settings(
    ws: Path,
    timesteps: int,
    algo: str = "MaskablePPO",
    env: EnvSpec = TICTACTOE,
    vec_env: str = "dummy",
    **league: Any,
) -> Any:
    """The settings `train-env` parses (``_argv``'s for the same options)."""
    base = parse_settings(
        "g",
        timesteps=timesteps,
        env=env.to_argument(),
        resume=league.pop("resume", None),
        seed=0,
        algo=algo,
        hyperparams=json.dumps(SMALL),
        workspace=ws,
        n_envs=2,
        vec_env=vec_env,
        **(
            {"checkpoint_every": league.pop("checkpoint_every")}
            if "checkpoint_every" in league
            else {}
        ),
    )
    return league_settings(base, LeagueOptions(**league))


def observations(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of random tic-tac-toe games (what a player sees, its legal moves)."""
    info, game, rng = game_info(TICTACTOE), make_game(TICTACTOE), np.random.default_rng(1)
    obs, masks = [], []
    while len(obs) < n:
        game.reset(seed=int(rng.integers(1000)))
        while not any(game.terminations.values()) and len(obs) < n:
            seen, mask = split_observation(game.observe(game.agent_selection), info)
            obs.append(seen)
            masks.append(mask.astype(bool))
            game.step(int(rng.choice(np.flatnonzero(mask))))
    game.close()
    return np.array(obs), np.array(masks)


@pytest.mark.slow
def test_a_short_training_writes_a_masked_bot_exact_to_maskable_ppo(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    assert train_game(settings(tmp_path, 256, opponent_mode="pool", snapshot_every=64)) == 0
    bot = load_env_bot(tmp_path / "bots" / "g.json")
    assert bot.action_mask and bot.provenance is not None
    assert bot.provenance["algo"] == "MaskablePPO" and bot.provenance["opponent_mode"] == "pool"
    model = MaskablePPO.load(tmp_path / "checkpoints" / "g" / "final.zip", device="cpu")
    obs, masks = observations(300)
    expected = [
        int(model.predict(o, action_masks=m, deterministic=True)[0])
        for o, m in zip(obs, masks, strict=True)
    ]
    assert bot.act(obs, deterministic=True, mask=masks).tolist() == expected
    assert all(masks[i, a] for i, a in enumerate(expected))
    final = rules.from_json(json.loads((tmp_path / "checkpoints/g/final.league.json").read_text()))
    assert final.pool and sum(r.games for r in final.table.values()) > 0
    kept = {p.stem for p in (tmp_path / "checkpoints/g/league").glob("snap-*.json")}
    assert kept == set(final.pool)  # snapshots no league names are pruned


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "opponents"),
    [
        ({"opponent_mode": "random"}, {"random"}),
        ({"opponent_mode": "bot:search:1"}, {"search:1"}),
        (
            {"opponent_mode": "self_play", "league_bots": ("random",), "bot_share": 0.5},
            {"snap-0", "random"},
        ),
    ],
)
def test_each_opponent_mode_plays_its_opponents(
    tmp_path: Path, options: dict[str, Any], opponents: set[str]
) -> None:
    assert train_game(settings(tmp_path, 64, **options)) == 0
    final = rules.from_json(json.loads((tmp_path / "checkpoints/g/final.league.json").read_text()))
    assert set(final.table) == opponents


@pytest.mark.parametrize(
    ("env", "algo", "options", "fault"),
    [
        (
            RPS,
            "MaskablePPO",
            {},
            "--algo MaskablePPO needs action masks, but pettingzoo.classic.rps_v2",
        ),
        (
            TICTACTOE,
            "MaskablePPO",
            {"opponent_mode": "league"},
            "--opponent-mode 'league': choose one of",
        ),
        (
            TICTACTOE,
            "MaskablePPO",
            {"opponent_mode": "bot:"},
            "--opponent-mode 'bot:': name the bot",
        ),
        (
            TICTACTOE,
            "MaskablePPO",
            {"opponent_mode": "pool", "league_bots": ("nope.json",)},
            "--league-bot 'nope.json': not random, search:N nor a bot file",
        ),
        (TICTACTOE, "MaskablePPO", {"opponent_mode": "bot:search:99"}, "depth must be 1 to"),
        (TICTACTOE, "MaskablePPO", {"sampling": "best"}, "--sampling 'best': choose one of"),
        (TICTACTOE, "A2C", {}, "--algo A2C: a pettingzoo game trains with MaskablePPO"),
        (TICTACTOE, "PPO", {}, "--algo PPO: pettingzoo.classic.tictactoe_v3 masks its moves"),
    ],
)
def test_bad_input_is_one_line_before_training(
    tmp_path: Path, env: EnvSpec, algo: str, options: dict[str, Any], fault: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        train_game(settings(tmp_path, 64, algo, env, **options))
    assert fault in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "bots" / "g.json").exists()


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"opponent_mode": "pool", "league_bots": ("c4.json",)}, "--league-bot"),
        ({"opponent_mode": "bot:c4.json"}, "--opponent-mode bot:"),
    ],
)
def test_a_bot_of_another_game_is_one_line_naming_its_option(
    tmp_path: Path, options: dict[str, Any], option: str
) -> None:
    from cosmic_curriculum.envs.policy import save_env_bot
    from tests.envs.game_helpers import CONNECT_FOUR, random_game_bot

    save_env_bot(random_game_bot(CONNECT_FOUR), tmp_path / "c4.json")
    with pytest.raises(ConfigError) as caught:
        train_game(settings(tmp_path, 64, **options))
    message = str(caught.value)
    assert message.startswith(
        f"{option} {tmp_path / 'c4.json'}: a bot of 'pettingzoo.classic.connect_four_v3' "
        "whose observation or action space is not this game's; name a bot of this game"
    )
    assert "\n" not in message and not (tmp_path / "bots" / "g.json").exists()


@pytest.mark.parametrize(
    ("damage", "fault"),
    [
        ("truncate", "final.league.json: league is not valid JSON ("),
        ("remove", "final.league.json: missing; the league of final.zip was not saved with it"),
        ("snapshot", "snap-0.json: missing, though the league of final.zip has it in its pool"),
    ],
)
def test_a_continuation_whose_league_is_damaged_is_one_line(
    tmp_path: Path, damage: str, fault: str
) -> None:
    pool = {"opponent_mode": "pool", "snapshot_every": 32}
    assert train_game(settings(tmp_path, 64, **pool)) == 0
    folder = tmp_path / "checkpoints" / "g"
    league = folder / "final.league.json"
    if damage == "truncate":
        league.write_text(league.read_text()[:40])
    elif damage == "remove":
        league.unlink()
    else:
        (folder / "league" / "snap-0.json").unlink()
    before = (folder / "final.zip").stat().st_mtime_ns
    with pytest.raises(TrainerError) as caught:
        train_game(settings(tmp_path, 128, resume=folder / "final.zip", **pool))
    message = str(caught.value)
    assert fault in message and "\n" not in message
    # checkpoints are not committed: the way back is another of them, not git
    assert "--resume another step checkpoint" in message and "git show" not in message
    assert (folder / "final.zip").stat().st_mtime_ns == before  # nothing trained


def _argv(ws: Path, timesteps: int, resume: str | None = None) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "cosmic_curriculum",
        "train-env",
        "g",
        "--timesteps",
        str(timesteps),
        "--env",
        TICTACTOE.to_argument(),
        "--n-envs",
        "2",
        "--hyperparams",
        json.dumps(SMALL),
        "--opponent-mode",
        "pool",
        "--pool-size",
        "3",
        "--snapshot-every",
        "64",
        "--checkpoint-every",
        "128",
        "--league-bot",
        "random",
        "--league-bot-share",
        "0.3",
        "--workspace",
        str(ws),
    ]
    return argv + (["--resume", resume] if resume else [])


def _wait_for(path_glob: Path, pattern: str, proc: subprocess.Popen[bytes]) -> list[Path]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = sorted(path_glob.glob(pattern))
        if found:
            return found
        assert proc.poll() is None, "the trainer ended before its first step checkpoint"
        time.sleep(0.05)
    raise AssertionError("no step checkpoint within 120 s")


def _league(path: Path) -> rules.LeagueState:
    return rules.from_json(json.loads(path.read_text()))


POOL = {
    "opponent_mode": "pool",
    "pool_size": 3,
    "snapshot_every": 64,
    "checkpoint_every": 128,
    "league_bots": ("random",),
    "bot_share": 0.3,
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "vec_env"),
    [(signal.SIGKILL, "dummy"), (signal.SIGTERM, "dummy"), (signal.SIGTERM, "subproc")],
)
def test_a_continuation_restores_the_league_of_its_checkpoint(
    tmp_path: Path, how: int, vec_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # subproc: the seats in worker processes, which leave the signal to the trainer: it
    # saves the step checkpoint and its league, then closes them
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "COSMIC_CURRICULUM_NO_GIT": "1"}
    argv = [*_argv(ws, 100_000), "--vec-env", vec_env]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    directory = ws / "checkpoints" / "g"
    try:
        _wait_for(directory, "step_*.zip", proc)
        os.killpg(proc.pid, how)  # the whole group, as the curriculum signals a trainer
        assert proc.wait(timeout=120) in (-signal.SIGKILL, 128 + signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    steps = sorted(directory.glob("step_*.zip"), key=lambda p: int(p.stem[5:]))
    checkpoint = steps[-1]
    # written before the zip: a checkpoint never lacks its league, nor the league a snapshot
    saved = _league(checkpoint.with_name(f"{checkpoint.stem}.league.json"))
    assert saved.pool and all((directory / "league" / f"{n}.json").is_file() for n in saved.pool)
    done = int(checkpoint.stem[5:])
    twin = tmp_path / "twin"
    shutil.copytree(ws, twin)
    rule = rules.LeagueRule(3, "pfsp", bots=("random",), bot_share=0.3)
    finals = []
    for root in (ws, twin):
        capsys.readouterr()
        resume = checkpoint.relative_to(ws)
        continued = settings(root, done + 128, vec_env=vec_env, resume=resume, **POOL)
        assert train_game(continued) == 0
        out = capsys.readouterr().out
        restored = re.search(r"continuing.*next opponents (.*)$", out, re.M)
        assert restored is not None, out
        # the continuation's next draws are the saved league's (the same rng state)
        assert restored.group(1) == ", ".join(rules.peek(saved, rule, 5))
        finals.append(_league(root / "checkpoints" / "g" / "final.league.json"))
    assert finals[0] == finals[1]  # the same league on from that checkpoint
    for name, record in saved.table.items():  # the table continued, not reset
        after = finals[0].table.get(name)
        assert after is None or after.games >= record.games
