"""`gate simulate`: the gate rules' error rates and episode counts by Monte Carlo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from cosmic_curriculum.cli.app import gate_app, guarded
from cosmic_curriculum.cli.evaluate import gate_rule_option
from cosmic_curriculum.errors import describe_validation, option_name

SprtModel = Literal["pentanomial", "trinomial"]


@gate_app.command("simulate")
def gate_simulate_command(
    rule: Annotated[
        list[str],
        typer.Option("--rule", metavar="RULE", help="Rules to simulate (repeat): margin, sprt."),
    ] = ["margin", "sprt"],  # noqa: B006 - Typer passes a new list; the default stays as is
    trials: Annotated[int, typer.Option(help="Monte Carlo trials per cell.")] = 20_000,
    draws: Annotated[str, typer.Option(help="Comma-separated draw rates.")] = "0,0.2,0.4",
    model: Annotated[
        str, typer.Option(help="SPRT model: pentanomial (pairs) or trinomial (games).")
    ] = "pentanomial",
    check_every: Annotated[
        int | None,
        typer.Option(
            help="SPRT looks every N pairs (pentanomial) or N episodes (trinomial); default: "
            "every pair, or every batch with --check batch."
        ),
    ] = None,
    check: Annotated[str, typer.Option(help="pair or batch (see docs/GATES.md).")] = "pair",
    batch_pairs: Annotated[int, typer.Option(help="Pairs per batch.")] = 5,
    gap: Annotated[float, typer.Option(help="SPRT: the regression (win-rate gap) of H0.")] = 0.25,
    alpha: Annotated[
        float, typer.Option(help="SPRT: rate of passing a regression of --gap.")
    ] = 0.05,
    beta: Annotated[float, typer.Option(help="SPRT: rate of failing an equal candidate.")] = 0.05,
    max_episodes: Annotated[
        int, typer.Option(help="SPRT: episode cap (even: the evaluator plays pairs).")
    ] = 400,
    episodes: Annotated[
        int, typer.Option(help="margin: episodes played (even: the evaluator plays pairs).")
    ] = 100,
    margin: Annotated[float, typer.Option(help="margin: regression_margin.")] = 0.15,
    worse: Annotated[float, typer.Option(help="True gap of the 'worse' candidate.")] = 0.25,
    better: Annotated[float, typer.Option(help="True advantage of the 'better' candidate.")] = 0.10,
    seed: Annotated[int, typer.Option(help="Simulation seed.")] = 0,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the rows as JSON.")
    ] = None,
) -> None:
    """Monte Carlo of the gate rules: error rates and episodes at given draw rates."""

    def run() -> None:
        from pydantic import ValidationError
        from rich.console import Console

        from cosmic_curriculum.cli.tables import gate_simulation_table
        from cosmic_curriculum.errors import ConfigError, EvaluationError
        from cosmic_curriculum.evaluation.evaluate import check_even
        from cosmic_curriculum.evaluation.gate import (
            GateSettings,
            SimSpec,
            simulate_table,
            spec_label,
        )
        from cosmic_curriculum.system import fsio

        try:
            rates = [float(x) for x in draws.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(
                f"--draws {draws!r}: give comma-separated numbers like 0,0.2,0.4"
            ) from None
        if not rates or any(not 0.0 <= r < 1.0 for r in rates):
            raise ConfigError(f"--draws {draws!r}: each draw rate must be in [0, 1)")
        if trials < 1:
            raise ConfigError(f"--trials {trials}: must be >= 1")
        if model not in ("pentanomial", "trinomial"):
            raise ConfigError(f"--model {model!r}: choose pentanomial or trinomial")
        sprt_model: SprtModel = "pentanomial" if model == "pentanomial" else "trinomial"
        if check not in ("pair", "batch"):
            raise ConfigError(f"--check {check!r}: choose pair or batch")
        if check_every is not None and check_every < 1:
            raise ConfigError(f"--check-every {check_every}: must be >= 1")
        if json_out is not None:
            fsio.check_output_file(json_out, "--json")
        specs = []
        for r in rule:
            gate_rule_option(r, "--rule")
            try:
                settings = GateSettings(
                    rule=r,
                    episodes=episodes,
                    regression_margin=margin,
                    gap=gap,
                    alpha=alpha,
                    beta=beta,
                    max_episodes=max_episodes,
                    batch_pairs=batch_pairs,
                    check=check,
                )
            except ValidationError as exc:
                raise ConfigError(describe_validation(exc, option_name, first_only=True)) from None
            # Simulate only what the evaluator can run: it refuses odd counts (pairs).
            try:
                if r == "margin":
                    check_even(episodes, "--episodes")
                else:
                    check_even(max_episodes, "--max-episodes")
            except EvaluationError as exc:
                raise ConfigError(str(exc)) from None
            m: SprtModel = sprt_model if r == "sprt" else "trinomial"
            specs.append(SimSpec(spec_label(settings, m, check_every), settings, m, check_every))
        for rate in rates:
            if max(worse, better) > 1.0 - rate:
                raise ConfigError(
                    f"--worse {worse} / --better {better} with draw rate {rate}: a win-rate gap "
                    f"cannot exceed 1 - draw rate"
                )
        rows = simulate_table(specs, rates, trials, worse=worse, better=better, seed=seed)
        console = Console()
        if not console.is_terminal:  # logs and pipes: keep each row on one line
            console = Console(width=max(console.width, 150))
        console.print(gate_simulation_table(rows, trials, worse, better))
        if json_out is not None:
            fsio.atomic_write_json(json_out, rows)

    guarded(run)
