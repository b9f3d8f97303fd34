"""Opponents named on the command line: ``inert``, ``random``, ``rookie``, ``bot:<path>``."""

from __future__ import annotations

from cosmic_curriculum.arena.policy import Policy as Bot
from cosmic_curriculum.bots.format import bot_from_document, load_bot, rookie_document
from cosmic_curriculum.bots.simple import InertBot, RandomBot
from cosmic_curriculum.errors import BotError


def bot_from_spec(spec: str, decision_ticks: int = 16) -> Bot:
    """An opponent from a command-line spec: ``inert``, ``random``, ``rookie`` or
    ``bot:<path>`` (``decision_ticks`` applies to inert and random)."""
    if spec == "inert":
        return InertBot(decision_ticks)
    if spec == "random":
        return RandomBot(decision_ticks)
    if spec == "rookie":
        return bot_from_document(rookie_document(), "rookie")
    if spec.startswith("bot:") and len(spec) > 4:
        return load_bot(spec[4:])
    raise BotError(
        f"opponent {spec!r} is not one of inert, random, rookie, bot:<path to a bot JSON>"
    )
