"""`evaluate` of a PettingZoo game's bot: seat-swapped pairs against another bot of the
game, `random` or `search:N` (the work: envs/game_evaluate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cosmic_curriculum.cli.app import workspace_lock


def is_game_bot(path: Path) -> bool:
    """An env bot JSON of a pettingzoo game (or such a bot's ONNX twin)."""
    from cosmic_curriculum.envs.policy import is_env_bot_file
    from cosmic_curriculum.system.fsio import read_json

    json_path = path.with_suffix(".json") if path.suffix == ".onnx" else path
    if not is_env_bot_file(json_path):
        return False
    env = read_json(json_path, "bot").get("env")
    return isinstance(env, dict) and env.get("kind") == "pettingzoo"


def evaluate_game_bots(
    candidate: str,
    reference: str,
    episodes: int | None,
    seed: int,
    history_path: Path,
    lock_wait: float,
    deterministic: bool | None,
    rule: str | None,
    bot_timeout: float,
) -> None:
    """Play and record the pairs; print the result in one line (with how often a
    program reference fell back)."""
    from cosmic_curriculum.curriculum.game_evaluation import gate_calls
    from cosmic_curriculum.defaults import EVAL_EPISODES, GAME_EVAL_DETERMINISTIC
    from cosmic_curriculum.envs.game_evaluate import evaluate_game
    from cosmic_curriculum.evaluation.gate import GateSettings
    from cosmic_curriculum.system.terminal import printable
    from cosmic_curriculum.workspace.outputs import history_target

    history_file = history_target(history_path)
    calls: dict[str, Any] = {}
    planned = EVAL_EPISODES if episodes is None else episodes
    if rule is not None:
        given = (
            {}
            if episodes is None
            else {"episodes" if rule == "margin" else "max_episodes": episodes}
        )
        planned, calls["decided"], calls["gate_of"] = gate_calls(
            GateSettings.model_validate({"rule": rule, **given})
        )
    with workspace_lock(history_file.parent, lock_wait):
        record = evaluate_game(
            Path(candidate),
            _player(reference, bot_timeout),
            history_path=history_file,
            episodes=planned,
            seed=seed,
            deterministic=GAME_EVAL_DETERMINISTIC if deterministic is None else deterministic,
            **calls,
        )
    verdict = f"; gate {record['gate']['verdict']}" if "gate" in record else ""
    cut = f", {record['cut_games']} cut at the move cap" if record["cut_games"] else ""
    print(
        printable(
            f"{candidate} vs {record['reference']}: {record['wins_a']}-{record['wins_b']}, "
            f"{record['draws']} draws in {record['episodes']} games ({len(record['pairs'])} "
            f"seat-swapped pairs{cut}){verdict}{_fallbacks(record)}; record {record['id']} "
            "appended to "
            f"{history_path}"
        )
    )
    if "reference_note" in record:
        print(printable(f"note: {record['reference_note']}"))


def _fallbacks(record: dict[str, Any]) -> str:
    """How often a program reference did not choose its move itself (its fallbacks)."""
    count = record.get("reference_fallbacks")
    return "" if count is None else f"; the reference fell back on {count} moves"


def refuse_builtins_without_an_env(candidate: str, reference: str) -> None:
    """`random` and `search:N` play a game or env, which only an env bot candidate names
    (the arena's bots are files); without one they would be taken for file names."""
    from cosmic_curriculum.envs.game_players import builtin_name
    from cosmic_curriculum.errors import ConfigError

    for name in (candidate, reference):
        if builtin_name(name) is not None and not Path(name).exists():
            raise ConfigError(
                f"evaluate {candidate} {reference}: {name} is a built-in reference of games "
                "and envs, so the candidate must be a bot file of one (bots/EXPERIMENT.json "
                "names its game or env); a program plays them as the reference: evaluate "
                "BOT exec:./program"
            )


def replay_env_bot(
    candidate: str, reference: str | None, drawn: Path, seed: int, bot_timeout: float
) -> dict[str, Any]:
    """`replay` of an env bot into ``drawn``: one episode of a Gymnasium env's bot (no
    reference), or one game of a game's bot against ``reference``."""
    from cosmic_curriculum.envs.onnx_twin import load_env_player
    from cosmic_curriculum.errors import ConfigError

    path = Path(candidate)
    bot = load_env_player(path)
    if bot.env.kind != "pettingzoo":
        if reference is not None:
            raise ConfigError(f"replay {candidate}: an env bot plays alone; drop {reference}")
        from cosmic_curriculum.envs.replay import render_env_replay

        return render_env_replay(path, drawn, seed=seed, bot=bot)
    if reference is None:
        raise ConfigError(
            f"replay {candidate}: a game's bot needs REFERENCE, the other player (random, "
            "search:N, a bot file of the game or exec:PROGRAM)"
        )
    from cosmic_curriculum.envs.game_replay import render_game_replay

    return render_game_replay(bot, path, _player(reference, bot_timeout), drawn, seed=seed)


def _player(reference: str, bot_timeout: float) -> Any:
    """A reference as a game evaluator takes it: ``exec:`` a program's command, else the
    text (a bot file, ``random`` or ``search:N``)."""
    from cosmic_curriculum.bots.external import EXEC_PREFIX, parse_exec

    return parse_exec(reference, bot_timeout) if reference.startswith(EXEC_PREFIX) else reference
