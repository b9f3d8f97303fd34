"""The PPO trainer behind ``cosmic-curriculum train`` (stable-baselines3 on the arena VecEnv).

One training run = one experiment: ``checkpoints/<exp>/step_<n>.zip`` every
``checkpoint_every`` timesteps (the last ``keep_checkpoints`` kept), ``final.zip`` at the
end, ``bots/<exp>.json`` exported from it, ``@progress`` lines on stdout and a learning
curve ``logs/<exp>.curve.png``. The trainer knows nothing about stages or the gate: every
stage difference arrives as a flag.

* :mod:`.settings` -- :class:`TrainSettings` (every option, its default and help; the
  defaults' reasons) and the game settings a run plays under;
* :mod:`.checkpoints` -- the resume rules, which checkpoints may be loaded, the game
  recorded in each checkpoint;
* :mod:`.ppo` -- the SB3 model: hyperparameters, device, new or loaded;
* :mod:`.callbacks` -- progress lines, periodic checkpoints, self-play;
* :mod:`.run` -- :func:`train`, one run top to bottom (signals, export, learning curve).

Importing the package stays cheap (no torch, SB3 or numpy): the CLI reads
:class:`TrainSettings` to build the ``train`` command's options, and ``status`` must not pay
for torch. Only :mod:`.callbacks` imports SB3 at import time, and :func:`train` imports it
when it starts training.
"""

from cosmic_curriculum.train.checkpoints import (
    ACTION_NAMES,
    GAME_MEMBER,
    ResumePlan,
    checked_checkpoint,
    checkpoint_game,
    plan_resume,
    reset_unused_actions,
    save_model_atomic,
    unused_actions,
)
from cosmic_curriculum.train.ppo import policy_kwargs, ppo_kwargs, ppo_layout, resolve_device
from cosmic_curriculum.train.run import TrainResult, export_bot, train
from cosmic_curriculum.train.settings import (
    OPPONENT_MODES,
    OpponentMode,
    TrainSettings,
    game_settings,
    settings_from_options,
)

__all__ = [
    "ACTION_NAMES",
    "GAME_MEMBER",
    "OPPONENT_MODES",
    "OpponentMode",
    "ResumePlan",
    "TrainResult",
    "TrainSettings",
    "checked_checkpoint",
    "checkpoint_game",
    "export_bot",
    "game_settings",
    "plan_resume",
    "policy_kwargs",
    "ppo_kwargs",
    "ppo_layout",
    "reset_unused_actions",
    "resolve_device",
    "save_model_atomic",
    "settings_from_options",
    "train",
    "unused_actions",
]
