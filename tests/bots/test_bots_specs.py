"""Opponents named on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from bot_helpers import mlp_doc, write

from cosmic_curriculum.bots import bot_from_spec
from cosmic_curriculum.errors import BotError


def test_bot_from_spec(tmp_path: Path) -> None:
    assert bot_from_spec("inert").kind == "inert"
    assert bot_from_spec("random", decision_ticks=4).decision_ticks == 4
    assert bot_from_spec("rookie").kind == "scripted"
    assert bot_from_spec("veteran").kind == "scripted"
    path = write(tmp_path, mlp_doc())
    assert bot_from_spec(f"bot:{path}").kind == "mlp"
    with pytest.raises(BotError, match="not one of inert, random, rookie, veteran"):
        bot_from_spec("self-play")
