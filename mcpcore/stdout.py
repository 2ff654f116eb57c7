"""Standard output whose reader went away (``mcpcore ... | head``).

One function, shared by the command line (``mcpcore.cli``) and the server it runs
(``mcpcore.serving``): neither imports the other for it.
"""

from __future__ import annotations

import os
import sys


def stdout_to_devnull() -> None:
    """After a ``BrokenPipeError`` on stdout: point it at devnull, so that nothing written
    later (the interpreter's last flush among it) fails again (the Python docs' recipe,
    ``signal`` module, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


__all__ = ["stdout_to_devnull"]
