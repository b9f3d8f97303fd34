"""The command line's shape: `train` options mirror TrainSettings, help shows plain metavars."""

from __future__ import annotations

import pytest
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.main import get_command
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.train import TrainSettings

# TrainSettings fields that tests and benchmarks set but the command does not offer.
NOT_OPTIONS = {"net_arch", "activation", "gae_lambda", "clip_range", "progress_interval"}


def test_train_options_take_name_default_and_help_from_train_settings() -> None:
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    command = group.commands["train"]
    params = {param.name: param for param in command.params}
    fields = TrainSettings.model_fields
    assert set(params) == set(fields) - NOT_OPTIONS
    for name, param in params.items():
        field = fields[name]
        assert isinstance(param, TyperArgument | TyperOption)
        assert param.help == field.description, name
        assert param.required == field.is_required(), name
        if name == "experiment":
            continue
        assert param.default == field.default, name
        assert f"--{name.replace('_', '-')}" in param.opts, name


@pytest.mark.parametrize(
    "argv",
    [
        ["train"],
        ["run"],
        ["status"],
        ["init"],
        ["evaluate"],
        ["replay"],
        ["ladder"],
        ["report"],
        ["gate", "simulate"],
    ],
)
def test_help_shows_no_python_types_as_metavars(argv: list[str]) -> None:
    result = CliRunner().invoke(app, [*argv, "--help"])
    assert result.exit_code == 0, result.output
    assert "[str]" not in result.output and "list[" not in result.output
