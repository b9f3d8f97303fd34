"""The curriculum's imperative shell: it observes the world, turns what it saw into events
of the pure core (:mod:`cosmic_curriculum.core`), saves, and acts.

:func:`.loop.run_curriculum` is `cosmic-curriculum run`. Nothing is imported here, so that
importing one module of the shell does not load the loop.
"""
