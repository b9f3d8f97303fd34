"""cosmic-curriculum: a curriculum orchestrator for training game bots with RL."""

__version__ = "0.1.0"
