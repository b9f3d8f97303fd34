"""``BoardCNN``: a features extractor for a board game's observation planes.

SB3's ``NatureCNN`` is built for Atari frames: 8x8 kernels of stride 4 leave nothing of a
6x7 board, and it needs uint8 images. ``BoardCNN`` keeps the board's size (stride 1,
zero padding ``(kernel - 1) // 2``), so a unit of the last convolution sees a patch of
the board in every direction, e.g. four in a row through two 3x3 layers and more.

Name it in `policy_kwargs`: ``features_extractor_class = "BoardCNN"``, with
``features_extractor_kwargs`` of ``zoo_values.BOARD_CNN_DEFAULTS`` (checked there). The
observation is a 3-D Box; PettingZoo's classic games give ``(rows, columns, planes)``
(``channels_last``), torch's Conv2d reads ``(planes, rows, columns)``, so the planes are
moved first. By default the planes are last unless the space is an image: SB3 transposes
an image observation to channels first before the policy sees it (``VecTransposeImage``),
so an image's planes are already first.

It has the form the env bot format replays (``envs/conv.py``): ``cnn`` (Conv2d + ReLU,
then Flatten) and ``linear`` (Linear + ReLU), plus ``channels_last``. This module imports
torch and SB3: import it only where training or export does.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from cosmic_curriculum.workspace.zoo_values import BOARD_CNN_DEFAULTS


class BoardCNN(BaseFeaturesExtractor):
    """Convolutions of stride 1 over the board, then one Linear + ReLU of ``features``."""

    def __init__(
        self,
        observation_space: Any,
        channels: list[int] = list(BOARD_CNN_DEFAULTS["channels"]),  # noqa: B006 (never mutated)
        kernel: int = int(BOARD_CNN_DEFAULTS["kernel"]),
        features: int = int(BOARD_CNN_DEFAULTS["features"]),
        channels_last: bool | None = BOARD_CNN_DEFAULTS["channels_last"],
    ) -> None:
        super().__init__(observation_space, features)
        shape = tuple(getattr(observation_space, "shape", None) or ())  # a Dict has none
        if len(shape) != 3:
            raise ValueError(
                f"BoardCNN reads a 3-D Box observation (rows, columns, planes), got shape "
                f"{shape}; use the default extractor for this env"
            )
        if channels_last is None:
            channels_last = not is_image_space(observation_space, check_channels=False)
        planes = shape[2] if channels_last else shape[0]
        modules: list[nn.Module] = []
        for width in channels:
            modules += [nn.Conv2d(planes, width, kernel, padding=(kernel - 1) // 2), nn.ReLU()]
            planes = width
        self.cnn = nn.Sequential(*modules, nn.Flatten())
        self.channels_last = channels_last
        with torch.no_grad():
            sample = torch.zeros((1, *shape))
            flat = self.cnn(self._planes_first(sample)).shape[1]
        self.linear = nn.Sequential(nn.Linear(flat, features), nn.ReLU())

    def _planes_first(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.permute(0, 3, 1, 2) if self.channels_last else obs

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.linear(self.cnn(self._planes_first(observations.float())))
