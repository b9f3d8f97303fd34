"""cosmic-curriculum: a curriculum orchestrator for training game bots with RL."""

from pathlib import Path

__version__ = "0.1.0"

# Packaged files (presets, the training wrapper). A plain path works for both wheel and
# editable installs, where importlib.resources' namespace readers do not on Python 3.11.
DATA_DIR = Path(__file__).resolve().parent / "data"
