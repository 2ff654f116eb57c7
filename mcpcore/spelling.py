"""Suggesting the name someone probably meant: ``(did you mean 'readOnlyHint'?)``.

One helper for every place that refuses or warns about an unknown name: the policy rule
files' keys and categories, and the keys of the dicts a tool, resource or prompt is
registered with (``mcpcore.tools.check_keys``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name ``word`` is most likely a misspelling of, or ``None``.

    >>> closest("readonlyHint", ["readOnlyHint", "destructiveHint"])
    'readOnlyHint'
    """
    found = difflib.get_close_matches(word, list(known), n=1)
    return found[0] if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'NAME'?)`` for the closest known name, or ``""``."""
    close = closest(word, known)
    return f" (did you mean {close!r}?)" if close else ""


__all__ = ["closest", "did_you_mean"]
