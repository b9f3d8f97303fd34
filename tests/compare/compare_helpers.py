"""What the end-to-end compare tests share: the CLI in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def cli(ws: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``cosmic-curriculum ARGS`` run in ``ws``, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
