"""Bots: players of the arena and the JSON files that hold them (docs/BOT_FORMAT.md).

A bot is an ``arena.policy.Policy`` (re-exported here as ``Bot``) that also records the
``game`` it was made for. Modules: ``mlp`` (numpy inference of exported weights),
``scripted`` (the rookie), ``veteran`` (the stronger scripted bot), ``simple`` (inert
and random), ``schema`` (the file format as pydantic models), ``format`` (build, load,
save and hash bot files), ``specs`` (an opponent named on the command line, bot
sources), ``external`` (programs speaking the ``cosmic-bot/1`` protocol) and
``onnx_model`` (MLP bots as ONNX, imported only when an ``.onnx`` file is met). Never
imports torch; the arena never imports this package.
"""

from cosmic_curriculum.arena.policy import Policy as Bot
from cosmic_curriculum.bots.external import ExecSpec, ExternalBot, stops_bots
from cosmic_curriculum.bots.format import (
    bot_files,
    bot_from_document,
    bot_sha256,
    mlp_bot_document,
    rookie_document,
    save_bot,
    simple_bot_document,
    veteran_document,
)
from cosmic_curriculum.bots.mlp import ACTIVATIONS, Layer, MlpBot
from cosmic_curriculum.bots.schema import BOT_FORMAT, BOT_VERSION, KINDS
from cosmic_curriculum.bots.scripted import (
    ROOKIE_DECISION_TICKS,
    ROOKIE_PARAMS,
    ScriptedBot,
    ScriptedParams,
)
from cosmic_curriculum.bots.simple import InertBot, RandomBot
from cosmic_curriculum.bots.specs import (
    BotSource,
    as_source,
    bot_from_spec,
    load_bot,
    open_bot,
    source_name,
    source_sha256,
)
from cosmic_curriculum.bots.veteran import (
    VETERAN_DECISION_TICKS,
    VETERAN_PARAMS,
    VeteranBot,
    VeteranParams,
)

__all__ = [
    "ACTIVATIONS",
    "BOT_FORMAT",
    "BOT_VERSION",
    "KINDS",
    "ROOKIE_DECISION_TICKS",
    "ROOKIE_PARAMS",
    "VETERAN_DECISION_TICKS",
    "VETERAN_PARAMS",
    "Bot",
    "BotSource",
    "ExecSpec",
    "ExternalBot",
    "InertBot",
    "Layer",
    "MlpBot",
    "RandomBot",
    "ScriptedBot",
    "ScriptedParams",
    "VeteranBot",
    "VeteranParams",
    "as_source",
    "bot_files",
    "bot_from_document",
    "bot_from_spec",
    "bot_sha256",
    "load_bot",
    "mlp_bot_document",
    "open_bot",
    "rookie_document",
    "save_bot",
    "simple_bot_document",
    "source_name",
    "source_sha256",
    "stops_bots",
    "veteran_document",
]
