"""The `cosmic-curriculum` command line: a thin Typer layer.

Each command parses its options, imports the module that does the work *inside* the
function (so `status` never pays for torch or stable-baselines3), calls one function, and
turns a :class:`~cosmic_curriculum.errors.CurriculumError` into a one-line message and an
exit code. One module per group of commands: :mod:`.train`, :mod:`.curriculum` (run,
status, init), :mod:`.evaluate` (evaluate, replay, ladder), :mod:`.gate` (gate simulate),
:mod:`.reports` (report), :mod:`.export` (export-onnx, history export), :mod:`.compare`
(compare); :mod:`.app` holds the app and the shared error handling. Result tables live in
:mod:`cosmic_curriculum.cli.tables`.
"""

# Importing a command module registers its commands on the app, in --help order.
from cosmic_curriculum.cli import train  # noqa: I001  (train is listed first)
from cosmic_curriculum.cli import curriculum, evaluate, gate, reports
from cosmic_curriculum.cli import export  # export-onnx, history export
from cosmic_curriculum.cli import compare
from cosmic_curriculum.cli.app import app

__all__ = ["app", "compare", "curriculum", "evaluate", "export", "gate", "reports", "train"]
