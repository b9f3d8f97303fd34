"""Tiny budgets for the real trainer, so tests that train for real stay short."""

from __future__ import annotations


def tiny_training_flags(timesteps: int) -> list[str]:
    """`train` flags for a few CPU rollouts of 256 steps against the inert opponent."""
    return [
        "--timesteps",
        str(timesteps),
        "--n-parallel",
        "16",
        "--speedup",
        "16",
        "--rollout-size",
        "256",
        "--n-epochs",
        "1",
        "--opponent-mode",
        "inert",
        "--device",
        "cpu",
    ]
