"""Opponents named on the command line: ``inert``, ``random``, ``rookie``, ``veteran``,
``bot:<path>``, ``exec:<command>``; and the bot *sources* of evaluate, replay and ladder
(a bot file's path or an ``exec:`` program)."""

from __future__ import annotations

from pathlib import Path

from cosmic_curriculum.arena.policy import Policy as Bot
from cosmic_curriculum.bots.external import EXEC_PREFIX, ExecSpec, ExternalBot, parse_exec
from cosmic_curriculum.bots.format import (
    bot_from_document,
    bot_sha256,
    read_document,
    rookie_document,
    veteran_document,
)
from cosmic_curriculum.bots.simple import InertBot, RandomBot
from cosmic_curriculum.defaults import DECISION_TICKS
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system.program import command_sha256

# A bot file or an external program.
BotSource = Path | ExecSpec


def load_bot(path: str | Path) -> Bot:
    """Read and validate a bot file (JSON, or ``.onnx`` run by onnxruntime); any fault
    raises ``BotError`` naming file and fault."""
    path = Path(path)
    if path.suffix.lower() == ".onnx":
        from cosmic_curriculum.bots.onnx_model import load_onnx_bot  # onnxruntime: lazily

        return load_onnx_bot(path)
    return bot_from_document(read_document(path), str(path))


def bot_from_spec(spec: str, decision_ticks: int = DECISION_TICKS) -> Bot:
    """An opponent from a command-line spec: ``inert``, ``random``, ``rookie``,
    ``veteran``, ``bot:<path>`` or ``exec:<command>`` (``decision_ticks`` applies to inert
    and random: the scripted bots keep their own; the caller closes an external bot)."""
    if spec == "inert":
        return InertBot(decision_ticks)
    if spec == "random":
        return RandomBot(decision_ticks)
    if spec == "rookie":
        return bot_from_document(rookie_document(), "rookie")
    if spec == "veteran":
        return bot_from_document(veteran_document(), "veteran")
    if spec.startswith("bot:") and len(spec) > 4:
        return load_bot(spec[4:])
    if spec.startswith(EXEC_PREFIX):
        return ExternalBot(parse_exec(spec))
    raise BotError(
        f"opponent {spec!r} is not one of inert, random, rookie, veteran, "
        "bot:<path to a bot JSON>, exec:<command>"
    )


def as_source(value: str | Path | ExecSpec, timeout: float | None = None) -> BotSource:
    """A bot path, or an ``exec:<command>`` string as the program it names."""
    if isinstance(value, ExecSpec):
        return value
    if isinstance(value, str) and value.startswith(EXEC_PREFIX):
        return parse_exec(value, timeout)
    return Path(value)


def open_bot(source: BotSource) -> Bot:
    """Load a bot file or start a program (stop it with ``close()`` or ``stops_bots``)."""
    return ExternalBot(source) if isinstance(source, ExecSpec) else load_bot(source)


def source_sha256(source: BotSource) -> str:
    """A bot file's sha256; for a program, the sha256 of its argv and of the bytes of
    every argument that names a file (its program, its script, its weights)."""
    if isinstance(source, Path):
        return bot_sha256(source)
    return command_sha256(source)


def source_name(source: BotSource) -> str:
    """A short name for titles and ladders: the file's or the program's stem."""
    return source.stem if isinstance(source, Path) else source.name
