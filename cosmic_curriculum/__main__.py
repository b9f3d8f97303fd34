"""`python -m cosmic_curriculum` is the same as the `cosmic-curriculum` command."""

from cosmic_curriculum.cli import app

app()
