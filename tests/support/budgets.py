"""Example budgets of the slow hypothesis properties: small by default, full on demand.

A property whose examples are expensive (a generated rule set decided, explained and
compared with an oracle; a generated signed proof verified) states two budgets: a small
one, for the default run, so that the unit tests stay quick, and the full one it was
written with. The hypothesis settings profile, named by ``HYPOTHESIS_PROFILE`` and loaded
in tests/conftest.py, picks one:

- ``default`` (unset): each slow property runs its small budget;
- ``full``: each runs its full budget, on demand (docs/performance.md, "The unit tests'
  CPU")::

      HYPOTHESIS_PROFILE=full .venv/bin/pytest tests/policy/test_rule_properties.py

Properties that are cheap keep hypothesis' own budget in both profiles.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

#: The profiles tests/conftest.py registers, by the name HYPOTHESIS_PROFILE gives.
PROFILES = ("default", "full")


def profile() -> str:
    """The profile ``HYPOTHESIS_PROFILE`` names (``default`` when unset); a name that is
    not a profile is refused, so a typo never runs the small budgets silently."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "") or "default"
    if name not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r} is not a profile of these tests: "
                         f"use one of {', '.join(PROFILES)}")
    return name


def budget(*, small: int, full: int, **kwargs: Any) -> settings:
    """Settings for a slow property: ``small`` examples in the default profile, ``full``
    in the full one; ``kwargs`` are its other settings (``deadline``, health checks)."""
    if not 0 < small <= full:
        raise ValueError(f"a small budget is 1..full examples, not {small} of {full}")
    return settings(max_examples=full if profile() == "full" else small, **kwargs)
