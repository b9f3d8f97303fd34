"""Every user-facing default, in one place.

The config models of `stages.toml`, the command-line options and their help text read
their defaults from here, so a default is changed once and the help always says it.
"""

from __future__ import annotations

# An external bot (`exec:` program): seconds it may take for one answer.
BOT_TIMEOUT_SECONDS = 10.0
