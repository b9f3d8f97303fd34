"""How this package starts a child Python.

``-P``: ``python -m`` and ``-c`` would otherwise put the working directory (a workspace)
first on ``sys.path``, and any file there named like a standard or installed module
(``random.py``, ``json.py``, ``torch.py``) would replace it in the trainer. A workspace's
own modules are still found, after the installed ones (``workspace.locate``'s
``import_own_modules``).
"""

from __future__ import annotations

import sys


def python_argv(*args: str) -> list[str]:
    """This interpreter with ``args``, the working directory kept off ``sys.path``."""
    return [sys.executable, "-P", *args]
