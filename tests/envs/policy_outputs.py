"""What SB3's predict takes the argmax of, for the export tests to hold a bot's outputs to."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def torch_outputs(model: Any, obs: Any) -> Any:
    """The logits (torch's Categorical keeps them log-softmax normalised) or Q-values."""
    policy = model.policy
    tensor = policy.obs_to_tensor(obs)[0]
    with torch.no_grad():
        if hasattr(policy, "q_net"):
            return policy.q_net(tensor).numpy()
        return policy.get_distribution(tensor).distribution.logits.numpy()


def log_softmax(out: Any) -> Any:
    """A bot's raw logits normalised as torch's Categorical keeps them."""
    top = out.max(axis=1, keepdims=True)
    return out - top - np.log(np.exp(out - top).sum(axis=1, keepdims=True))
