"""`evaluate`, `replay` and `ladder`: bots against bots (the work: evaluate.py, ladder.py)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from cosmic_curriculum.cli.app import OneLineUsageCommand, app, guarded, workspace_lock
from cosmic_curriculum.cli.evaluate_game import (
    evaluate_game_bots,
    is_game_bot,
    refuse_builtins_without_an_env,
)
from cosmic_curriculum.cli.seconds import seconds_callback
from cosmic_curriculum.defaults import (
    BOT_TIMEOUT_SECONDS,
    ENV_EVAL_DETERMINISTIC,
    EVAL_EPISODES,
    GAME_EVAL_DETERMINISTIC,
    LADDER_PAIRS,
    LOCK_WAIT_SECONDS,
    SPRT_BATCH_PAIRS,
    SPRT_MAX_EPISODES,
)
from cosmic_curriculum.workspace.locate import workspace_of


def _greedy(deterministic: bool) -> str:
    return "--deterministic" if deterministic else "--sample"


LOCK_WAIT_HELP = (
    "Seconds to wait for another process holding the workspace (a `run`, another "
    "`evaluate`) before giving up with an error."
)
LockWait = Annotated[
    float, typer.Option(help=LOCK_WAIT_HELP, callback=seconds_callback("lock_wait"))
]
# exec:<command> bots (bots/external.py): accepted wherever a bot file is.
BOT_HELP = "a bot JSON, or exec:<command> for a program speaking cosmic-bot/1"
REPLAY_OTHER = "for a game's bot: random, search:N, a bot, a program; none for a Gym env bot"
BotTimeout = Annotated[
    float,
    typer.Option(
        "--bot-timeout",
        help="Seconds an exec: bot may take to start or to answer one decision.",
        callback=seconds_callback("bot"),
    ),
]


def gate_rule_option(
    rule: str | None, option: str = "--gate", choices: tuple[str, ...] = ("margin", "sprt")
) -> str | None:
    from cosmic_curriculum.errors import ConfigError

    if rule is not None and rule not in choices:
        named = ", ".join(choices[:-1]) + f" or {choices[-1]}"
        raise ConfigError(f"{option} {rule!r}: choose {named} (see docs/GATES.md)")
    return rule


@app.command("evaluate", cls=OneLineUsageCommand)
def evaluate_command(
    candidate: Annotated[str, typer.Argument(help=f"Candidate: {BOT_HELP} (counted as wins_a).")],
    reference: Annotated[str, typer.Argument(help=f"Reference: {BOT_HELP} (counted as wins_b).")],
    episodes: Annotated[
        int | None,
        typer.Option(
            "--episodes",
            "-n",
            help=f"Episodes (even: seat-swapped pairs). Default {EVAL_EPISODES}; with --gate "
            f"sprt the cap (default {SPRT_MAX_EPISODES}).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same record.")] = 0,
    history_path: Annotated[
        Path, typer.Option("--history", help="Evaluation history to append to.")
    ] = Path("eval_history.json"),
    gate: Annotated[
        str | None,
        typer.Option("--gate", help="Also judge the result: margin (fixed episodes) or sprt."),
    ] = None,
    batch_pairs: Annotated[
        int | None,
        typer.Option(
            help=f"Pairs per vectorised batch under --gate sprt (default {SPRT_BATCH_PAIRS})."
        ),
    ] = None,
    lock_wait: LockWait = LOCK_WAIT_SECONDS,
    bot_timeout: BotTimeout = BOT_TIMEOUT_SECONDS,
    deterministic: Annotated[
        bool | None,
        typer.Option(
            "--deterministic/--sample",
            help="Env bots: their most likely action, or sampled from their policy (as a "
            f"gate's deterministic = false). Default: {_greedy(ENV_EVAL_DETERMINISTIC)} for "
            f"a Gymnasium env, {_greedy(GAME_EVAL_DETERMINISTIC)} for a PettingZoo game.",
        ),
    ] = None,
) -> None:
    """Play CANDIDATE against REFERENCE in seat-swapped pairs and append one record.

    A PettingZoo game's bot plays pairs of games (one seed, each seat once) against
    another bot of the game, `random` (uniform over the legal moves) or `search:N`
    (depth-N alpha-beta over the game's states).

    Holds the workspace lock of the history's directory while it runs (like `run`), so
    the two never write eval_history.json at once.
    """

    def run() -> None:
        from rich.console import Console
        from rich.progress import Progress

        from cosmic_curriculum.bots import as_source
        from cosmic_curriculum.cli.tables import evaluation_table, shown
        from cosmic_curriculum.envs.policy import is_env_bot_file
        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.evaluation.evaluate import run_evaluation
        from cosmic_curriculum.evaluation.gate import GateSettings
        from cosmic_curriculum.workspace import history
        from cosmic_curriculum.workspace.locate import import_own_modules
        from cosmic_curriculum.workspace.outputs import history_target

        import_own_modules(Path(candidate).parent)  # its env's module may be the workspace's
        rule = gate_rule_option(gate)
        if is_game_bot(Path(candidate)):
            evaluate_game_bots(
                candidate,
                reference,
                episodes,
                seed,
                history_path,
                lock_wait,
                deterministic,
                rule,
                bot_timeout,
            )
            return
        if is_env_bot_file(Path(candidate)) or _is_env_twin(Path(candidate)):
            greedy = ENV_EVAL_DETERMINISTIC if deterministic is None else deterministic
            _evaluate_env_bots(
                candidate, reference, episodes, seed, history_path, lock_wait, greedy, bot_timeout
            )
            return
        if is_env_bot_file(Path(reference)) or _is_env_twin(Path(reference)):
            raise ConfigError(
                f"evaluate {candidate} {reference}: an env bot plays as the candidate (it "
                f"names the env), anything else as its reference: evaluate {reference} "
                f"{candidate}"
            )
        refuse_builtins_without_an_env(candidate, reference)
        settings = None
        if rule is not None:
            if batch_pairs is not None and batch_pairs < 1:
                raise ConfigError(f"--batch-pairs {batch_pairs}: must be >= 1")
            extra = {} if batch_pairs is None else {"batch_pairs": batch_pairs}
            settings = GateSettings.model_validate({"rule": rule, **extra})
        history_file = history_target(history_path)
        # A transient bar on stderr, only on a terminal (logs get the summary alone).
        err = Console(stderr=True)
        with (
            workspace_lock(history_file.parent, lock_wait),
            Progress(console=err, transient=True, disable=not err.is_terminal) as bar,
        ):
            history.load(history_file)  # a history we could not append to: before any game
            task = bar.add_task("evaluating", total=None)
            record = run_evaluation(
                as_source(candidate, bot_timeout),
                as_source(reference, bot_timeout),
                history_path=history_file,
                episodes=episodes,
                gate=settings,
                seed=seed,
                on_progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        console = Console()
        console.print(evaluation_table(record))
        console.print(shown(record["summary"]), highlight=False, soft_wrap=True)
        console.print(f"record [bold]{shown(record['id'])}[/] appended to {shown(history_path)}")

    guarded(run)


def _evaluate_env_bots(
    candidate: str,
    reference: str,
    episodes: int | None,
    seed: int,
    history_path: Path,
    lock_wait: float,
    deterministic: bool,
    bot_timeout: float,
) -> None:
    """An env bot (a Gymnasium stage's) against another, `random` or an `exec:` program
    (it plays the candidate's env), by episode returns."""
    from cosmic_curriculum.bots.external import EXEC_PREFIX, parse_exec
    from cosmic_curriculum.envs.evaluate import RANDOM, Reference, evaluate_env
    from cosmic_curriculum.system.terminal import printable
    from cosmic_curriculum.workspace.outputs import history_target

    history_file = history_target(history_path)
    played: Reference
    if reference in (RANDOM, f"builtin:{RANDOM}"):
        played = RANDOM
    elif reference.startswith(EXEC_PREFIX):
        played = parse_exec(reference, bot_timeout)
    else:
        played = Path(reference)
    with workspace_lock(history_file.parent, lock_wait):
        record = evaluate_env(
            Path(candidate),
            played,
            history_path=history_file,
            episodes=EVAL_EPISODES if episodes is None else episodes,
            seed=seed,
            deterministic=deterministic,
        )
    print(
        printable(
            f"{candidate} vs {reference}: {record['wins_a']}-{record['wins_b']}, "
            f"{record['draws']} draws, {record['successes']}/{record['episodes']} successes"
            f"{_fallbacks(record)}; record {record['id']} appended to {history_path}"
        )
    )


def _fallbacks(record: dict[str, Any]) -> str:
    """How often a program reference did not choose its action itself (its fallbacks)."""
    count = record.get("reference_fallbacks")
    return "" if count is None else f"; the reference fell back on {count} decisions"


@app.command("replay", cls=OneLineUsageCommand)
def replay_command(
    candidate: Annotated[str, typer.Argument(help=f"Plays blue: {BOT_HELP}; or an env bot.")],
    reference: Annotated[
        str | None, typer.Argument(help=f"Plays orange: {BOT_HELP}; {REPLAY_OTHER}")
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Picture to write: .png or .gif.")
    ] = Path("replay.gif"),
    seed: Annotated[int, typer.Option(help="Seed of the kickoff (episode) and the noise.")] = 0,
    bot_timeout: BotTimeout = BOT_TIMEOUT_SECONDS,
) -> None:
    """Play one match and draw it (top-down and side view of ships and orb); for an env
    bot (JSON or its ONNX twin), one episode drawn from the env's rgb_array frames; for a
    game's bot, one game in the first seat against REFERENCE, drawn from the game's."""

    def run() -> None:
        from cosmic_curriculum.bots import as_source
        from cosmic_curriculum.envs.policy import is_env_bot_file
        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.evaluation.evaluate import render_replay
        from cosmic_curriculum.system.fsio import without_surrogates
        from cosmic_curriculum.system.terminal import printable
        from cosmic_curriculum.workspace.outputs import check_output, write_output

        check_output(out, "--out")
        shown = without_surrogates(str(out))  # any file name, as UTF-8 can print it
        with tempfile.TemporaryDirectory() as private:
            # drawn in a private directory, then written as every named output is
            drawn = Path(private) / f"replay{out.suffix}"
            if is_env_bot_file(Path(candidate)) or _is_env_twin(Path(candidate)):
                from cosmic_curriculum.cli.evaluate_game import replay_env_bot

                info = replay_env_bot(candidate, reference, drawn, seed, bot_timeout)
                write_output(out, drawn.read_bytes(), "--out")
                sys.stdout.write(printable(f"{info['title']}; wrote {shown}") + "\n")
                return
            if reference is None:
                raise ConfigError(
                    f"replay {candidate}: an arena match needs REFERENCE, the other bot"
                )
            blue, orange = as_source(candidate, bot_timeout), as_source(reference, bot_timeout)
            info = render_replay(blue, orange, drawn, seed=seed)
            write_output(out, drawn.read_bytes(), "--out")
            info["out"] = shown
        outcome = {1: "candidate won", -1: "reference won", 0: "draw"}[info["outcome"]]
        said = f"{outcome} after {info['seconds']:.1f} s; wrote {info['out']}"
        sys.stdout.write(printable(said) + "\n")

    guarded(run)


@app.command("ladder", cls=OneLineUsageCommand)
def ladder_command(
    bots_dir: Annotated[Path, typer.Option(help="Directory of bot JSON files.")] = Path("bots"),
    pairs: Annotated[int, typer.Option(help="Seat-swapped pairs per match.")] = LADDER_PAIRS,
    out_dir: Annotated[Path, typer.Option(help="Where ladder.json/.md/.png go.")] = Path("logs"),
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same ladder.")] = 0,
    game_from: Annotated[
        Path | None,
        typer.Option(help="Play under this bot's recorded game settings (default: the defaults)."),
    ] = None,
    lock_wait: LockWait = LOCK_WAIT_SECONDS,
    bot: Annotated[
        list[str] | None,
        typer.Option("--bot", metavar="BOT", help=f"Also rank this bot ({BOT_HELP}); repeatable."),
    ] = None,
    bot_timeout: BotTimeout = BOT_TIMEOUT_SECONDS,
) -> None:
    """Round robin among all bots: Elo ratings with 95% error bars, table and PNG.

    Bot files that cannot be loaded are skipped with the reason. When --out-dir lies in a
    workspace (a directory with curriculum_state.json or its lock), the ladder holds that
    workspace's lock while it runs, like every command that writes there.
    """

    def run() -> None:
        import contextlib

        from rich.console import Console

        from cosmic_curriculum.bots import as_source
        from cosmic_curriculum.cli.tables import ladder_table, shown
        from cosmic_curriculum.envs.ladder import has_env_bots
        from cosmic_curriculum.evaluation.ladder import LADDER_FILES, run_ladder
        from cosmic_curriculum.system.output_files import check_output_dir
        from cosmic_curriculum.workspace.outputs import check_output

        check_output_dir(out_dir, "--out-dir")
        for name in LADDER_FILES:
            if (out_dir / name).exists() or (out_dir / name).is_symlink():
                check_output(out_dir / name, "--out-dir")
        env_ladder = has_env_bots(bots_dir)
        players = [] if env_ladder else [as_source(b, bot_timeout) for b in bot or []]
        workspace = workspace_of(out_dir)
        with workspace_lock(workspace, lock_wait) if workspace else contextlib.nullcontext():
            if env_ladder:
                doc = _env_ladder(bots_dir, pairs, out_dir, seed, game_from, bot or [])
            else:
                doc = run_ladder(
                    bots_dir,
                    pairs=pairs,
                    out_dir=out_dir,
                    seed=seed,
                    game_from=game_from,
                    players=players,
                )
        console = Console()
        console.print(ladder_table(doc, pairs))
        for skipped in doc["skipped"]:
            console.print(f"skipped: {shown(skipped['reason'])}", highlight=False, soft_wrap=True)
        files = {key: shown(path) for key, path in doc["files"].items()}
        console.print(f"wrote {files['table']}, {files['png']}, {files['json']}")

    guarded(run)


def _is_env_twin(path: Path) -> bool:
    from cosmic_curriculum.envs.policy import is_env_bot_file

    # An .onnx next to an env bot JSON of its name is that bot's twin.
    return path.suffix == ".onnx" and is_env_bot_file(path.with_suffix(".json"))


def _env_ladder(
    bots_dir: Path,
    pairs: int,
    out_dir: Path,
    seed: int,
    game_from: Path | None,
    players: list[str],
) -> dict[str, Any]:
    """The round robin of a directory of env bots (docs/ENVIRONMENTS.md)."""
    from cosmic_curriculum.envs.evaluate import RANDOM
    from cosmic_curriculum.envs.ladder import env_round_robin
    from cosmic_curriculum.errors import ConfigError
    from cosmic_curriculum.evaluation.ladder import ladder_document, write_ladder

    if game_from is not None:
        raise ConfigError(f"--game-from {game_from}: env bots play their own env; drop it")
    rr = env_round_robin(bots_dir, pairs=pairs, seed=seed, players=players)
    base = {
        "kind": "env",
        "pairing": "paired episode seeds",
        "env": rr.env,
        "mean_returns": rr.mean_returns,
    }
    doc = ladder_document(
        rr.names,
        rr.paths,
        rr.games,
        rr.points,
        rr.wins,
        pairs=pairs,
        seed=seed,
        base=base,
        anchor=RANDOM,
    )
    doc["skipped"] = [{"path": str(p), "reason": why} for p, why in rr.skipped]
    return write_ladder(doc, out_dir)
