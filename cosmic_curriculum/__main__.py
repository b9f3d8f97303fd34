"""`python -m cosmic_curriculum` is the same as the `cosmic-curriculum` command."""

from cosmic_curriculum.entry import main

main()
