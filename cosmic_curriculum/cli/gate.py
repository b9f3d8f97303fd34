"""`gate simulate`: the gate rules' error rates and episode counts by Monte Carlo.

The options that set the gate are built from :class:`GateSettings` (as `train`'s are from
TrainSettings): each one's type, default and help text is that field's, so the simulator
always starts from the defaults a stage's gate has."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin

import typer

from cosmic_curriculum.cli.app import gate_app, guarded
from cosmic_curriculum.cli.evaluate import gate_rule_option
from cosmic_curriculum.defaults import (
    SIMULATE_BETTER_GAP,
    SIMULATE_DRAW_RATES,
    SIMULATE_MAX_AGAINST,
    SIMULATE_MAX_TRIALS,
    SIMULATE_MODEL,
    SIMULATE_RETURN_SD,
    SIMULATE_RULES,
    SIMULATE_TRIALS,
    SIMULATE_WEAK_SUCCESS,
    SIMULATE_WORSE_GAP,
)
from cosmic_curriculum.errors import describe_validation, option_name
from cosmic_curriculum.workspace.config import GateSettings

SprtModel = Literal["pentanomial", "trinomial"]

# The options that are GateSettings fields, in --help order: option name -> field name
# (`--margin` sets regression_margin under the name the option always had).
GATE_OPTIONS: dict[str, str] = {
    "check": "check",
    "batch_pairs": "batch_pairs",
    "gap": "gap",
    "alpha": "alpha",
    "beta": "beta",
    "max_episodes": "max_episodes",
    "episodes": "episodes",
    "margin": "regression_margin",
    "measure": "measure",
    "target": "target",
    "delta": "delta",
    "min_episodes": "min_episodes",
    "success_return": "success_return",
}


# A short metavar keeps the help's option column as wide as it was before the option.
METAVARS = {"success_return": "RETURN"}


def _gate_parameter(option: str) -> inspect.Parameter:
    """The command parameter of one GateSettings field: its type, default and help."""
    field = GateSettings.model_fields[GATE_OPTIONS[option]]
    kind: Any = field.annotation
    if get_origin(kind) is Literal:
        # A choice stays a plain string, checked below with a one-line error.
        kind = str
    return inspect.Parameter(
        option,
        inspect.Parameter.KEYWORD_ONLY,
        default=field.default,
        annotation=Annotated[
            kind, typer.Option(help=field.description, metavar=METAVARS.get(option))
        ],
    )


def gate_simulate_command(
    rule: Annotated[
        list[str],
        typer.Option(
            "--rule",
            metavar="RULE",
            help="Rules to simulate (repeat): margin, sprt, threshold (needs --target); each "
            "alone (a stage's several rules are not simulated together).",
        ),
    ] = [*SIMULATE_RULES],  # noqa: B006 - Typer passes a new list; the default stays as is
    trials: Annotated[int, typer.Option(help="Monte Carlo trials per cell.")] = SIMULATE_TRIALS,
    draws: Annotated[str, typer.Option(help="Comma-separated draw rates.")] = SIMULATE_DRAW_RATES,
    model: Annotated[
        str, typer.Option(help="SPRT model: pentanomial (pairs) or trinomial (games).")
    ] = SIMULATE_MODEL,
    check_every: Annotated[
        int | None,
        typer.Option(
            help="SPRT looks every N pairs (pentanomial) or N episodes (trinomial); default: "
            "every pair, or every batch with --check batch."
        ),
    ] = None,
    worse: Annotated[
        float, typer.Option(help="True gap of the 'worse' candidate.")
    ] = SIMULATE_WORSE_GAP,
    better: Annotated[
        float, typer.Option(help="True advantage of the 'better' candidate.")
    ] = SIMULATE_BETTER_GAP,
    weak: Annotated[
        float, typer.Option(help="threshold: true success rate of the 'weak' bot.")
    ] = SIMULATE_WEAK_SUCCESS,
    sd: Annotated[
        float, typer.Option(help="threshold on return: SD of the simulated returns.")
    ] = SIMULATE_RETURN_SD,
    against: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help='The gate against forgetting (against = "all") with N earlier stages\' '
            "bots instead: the false-fail rate of a candidate equal to all of them (its "
            "reference's comparison, the N others, the whole gate) and how often one --worse "
            "worse than one earlier bot is caught.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Simulation seed.")] = 0,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the rows as JSON.")
    ] = None,
    **gate: Any,
) -> None:
    """Monte Carlo of the gate rules: error rates and episodes at given draw rates."""

    def run() -> None:
        from pydantic import ValidationError
        from rich.console import Console

        from cosmic_curriculum.cli.tables import gate_simulation_table, threshold_simulation_table
        from cosmic_curriculum.errors import ConfigError, EvaluationError
        from cosmic_curriculum.evaluation import threshold
        from cosmic_curriculum.evaluation.evaluate import check_even
        from cosmic_curriculum.evaluation.gate import SimSpec, simulate_table, spec_label
        from cosmic_curriculum.system import fsio
        from cosmic_curriculum.workspace.outputs import check_output, write_output

        try:
            rates = [float(x) for x in draws.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(
                f"--draws {draws!r}: give comma-separated numbers like {SIMULATE_DRAW_RATES}"
            ) from None
        if not rates or any(not 0.0 <= r < 1.0 for r in rates):
            raise ConfigError(f"--draws {draws!r}: each draw rate must be in [0, 1)")
        if not 1 <= trials <= SIMULATE_MAX_TRIALS:
            raise ConfigError(
                f"--trials {trials}: must be between 1 and {SIMULATE_MAX_TRIALS:,} (a rate's Monte "
                "Carlo error is then below 0.1%; the trials of a cell are held at once)"
            )
        if model not in ("pentanomial", "trinomial"):
            raise ConfigError(f"--model {model!r}: choose pentanomial or trinomial")
        sprt_model: SprtModel = "pentanomial" if model == "pentanomial" else "trinomial"
        if gate["check"] not in ("pair", "batch"):
            raise ConfigError(f"--check {gate['check']!r}: choose pair or batch")
        if check_every is not None and check_every < 1:
            raise ConfigError(f"--check-every {check_every}: must be >= 1")
        if json_out is not None:
            check_output(json_out, "--json")
        fields = {GATE_OPTIONS[option]: value for option, value in gate.items()}
        if not 0.0 <= weak <= 1.0:
            raise ConfigError(f"--weak {weak}: a success rate must be in [0, 1]")
        if sd <= 0.0:
            raise ConfigError(f"--sd {sd}: must be > 0")
        if against is not None and not 1 <= against <= SIMULATE_MAX_AGAINST:
            raise ConfigError(
                f"--against {against}: give the number of earlier stages' bots, 1 to "
                f"{SIMULATE_MAX_AGAINST}"
            )
        specs = []
        threshold_rows: list[dict[str, Any]] = []
        for r in rule:
            gate_rule_option(r, "--rule", ("margin", "sprt", "threshold"))
            if against is not None and r == "threshold":
                raise ConfigError(
                    f"--rule threshold with --against {against}: earlier bots are played "
                    "head to head (margin, sprt); drop --rule threshold"
                )
            try:
                settings = GateSettings.model_validate({"rule": r, **fields})
            except ValidationError as exc:
                raise ConfigError(describe_validation(exc, option_name, first_only=True)) from None
            # Simulate only what the evaluator can run: it refuses odd counts (pairs).
            try:
                if r == "threshold":
                    check_even(settings.max_episodes, "--max-episodes")
                    threshold_rows += threshold.simulate_table(
                        settings, trials, weak=weak, sd=sd, seed=seed, check_every=check_every
                    )
                    continue
                if r == "margin":
                    check_even(settings.episodes, "--episodes")
                else:
                    check_even(settings.max_episodes, "--max-episodes")
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
        console = Console()
        if not console.is_terminal:  # logs and pipes: keep each row on one line
            console = Console(width=max(console.width, 150))
        if against is not None:
            from cosmic_curriculum.cli.tables import forgetting_simulation_table
            from cosmic_curriculum.evaluation.forgetting_sim import simulate_family_table

            rows = simulate_family_table(specs, against, rates, trials, worse=worse, seed=seed)
            console.print(forgetting_simulation_table(rows, trials, against, worse))
        else:
            rows = simulate_table(specs, rates, trials, worse=worse, better=better, seed=seed)
            if specs:
                console.print(gate_simulation_table(rows, trials, worse, better))
        if threshold_rows:
            console.print(threshold_simulation_table(threshold_rows, trials))
        if json_out is not None:
            write_output(json_out, fsio.dumps_json(rows + threshold_rows), "--json")

    guarded(run)


# Typer reads a command's parameters from its signature (__signature__, set through
# __dict__: typeshed does not declare it on functions; annotations evaluated, since Typer
# does not evaluate a given signature's). The gate's fields go after --check-every, where
# those options always stood.
_OWN = [
    p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
    for p in inspect.signature(gate_simulate_command, eval_str=True).parameters.values()
    if p.kind is not inspect.Parameter.VAR_KEYWORD
]
_AT = [p.name for p in _OWN].index("check_every") + 1
gate_simulate_command.__dict__["__signature__"] = inspect.Signature(
    [*_OWN[:_AT], *(_gate_parameter(option) for option in GATE_OPTIONS), *_OWN[_AT:]]
)
gate_app.command("simulate")(gate_simulate_command)
