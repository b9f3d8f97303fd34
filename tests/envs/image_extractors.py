"""A features extractor of NatureCNN's form with other convolutions (padded, two layers,
a 5x5 kernel): what an env bot reads from any Conv2d/ReLU/Flatten/Linear extractor."""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.torch_layers import NatureCNN
from torch import nn


class PaddedCNN(NatureCNN):
    def __init__(self, observation_space: Any, features_dim: int = 32) -> None:
        super().__init__(observation_space, features_dim)
        channels = observation_space.shape[0]
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, 8, kernel_size=5, stride=3, padding=2),
            nn.ReLU(),
            nn.Conv2d(8, 8, kernel_size=3, stride=2, padding=1, bias=False),
            nn.Flatten(),
        )
        with torch.no_grad():
            sample = torch.as_tensor(observation_space.sample()[None]).float()
            flat = self.cnn(sample).shape[1]
        self.linear = nn.Sequential(nn.Linear(flat, features_dim), nn.ReLU())
