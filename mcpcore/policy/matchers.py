"""What a rule can say beyond who and which tool: argument predicates, time windows, globs.

What lives here: small, validated, immutable matchers with a ``matches`` method and a
``canonical`` form (for the rule set's hash), plus the checks that reject a matcher that
can never match (an empty range, an unclosed ``[`` in a glob, a window that is empty).
What must not: anything about principals, rules or decisions (``engine.py``), or file
positions (``rulefile.py`` adds those to the ``ValueError`` raised here).

Argument predicates are typed and strict, so a rule means what it says:

- ``eq``/``ne``: a string, number or boolean; ``true`` never equals ``1``;
- ``in``/``not_in``: a non-empty list of such values;
- ``prefix``/``suffix``/``contains``/``glob``: strings only (``glob``: ``fnmatch`` syntax,
  case-sensitive);
- ``lt``/``le``/``gt``/``ge``: numbers only (not booleans);
- ``min_length``/``max_length``: the length of a string or list;
- ``present``: whether the argument was sent at all.

A value of another type than the predicate's never matches, and an absent argument
matches only ``present = false``. Tool input validation still runs after the policy, so
a rule need not re-check the schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from fnmatch import fnmatchcase
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Scalar = str | int | float | bool

STRING_OPS: Final = ("prefix", "suffix", "contains", "glob")
NUMBER_OPS: Final = ("lt", "le", "gt", "ge")
LENGTH_OPS: Final = ("min_length", "max_length")
VALUE_OPS: Final = ("eq", "ne")
LIST_OPS: Final = ("in", "not_in")
#: Every predicate an argument condition may hold, in canonical order.
OPS: Final = (*VALUE_OPS, *LIST_OPS, *STRING_OPS, *NUMBER_OPS, *LENGTH_OPS, "present")
DAYS: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HOURS = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$")
_OFFSET = re.compile(r"^[+-]([01]\d|2[0-3]):([0-5]\d)$")
_MISSING = object()


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str:
    """The predicate type family of a JSON value: bool, number, string, other."""
    if isinstance(value, bool):
        return "bool"
    if is_number(value):
        return "number"
    return "string" if isinstance(value, str) else "other"


def _same(a: object, b: object) -> bool:
    """Equality that keeps booleans apart from numbers (``True != 1`` here)."""
    return _kind(a) == _kind(b) and a == b


def check_glob(pattern: str, *, what: str = "glob") -> str:
    """A valid ``fnmatch`` pattern: non-empty, every ``[`` closed. Returns it."""
    if not pattern:
        raise ValueError(f"{what} must not be empty")
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] in "!^":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            close = pattern.find("]", j)
            if close == -1:
                raise ValueError(f"{what} {pattern!r} has an unclosed '['")
            i = close
        i += 1
    return pattern


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


@dataclass(frozen=True, slots=True, init=False)
class ArgCondition:
    """Every predicate given must hold for one argument's value.

    >>> ArgCondition(prefix="/srv/", max_length=200).matches("/srv/data")
    True
    >>> ArgCondition(lt=10).matches(True)      # a boolean is not a number
    False
    """

    ops: tuple[tuple[str, Any], ...]

    def __init__(self, **ops: Any) -> None:
        if not ops:
            raise ValueError("an argument condition needs at least one predicate")
        unknown = sorted(set(ops) - set(OPS))
        if unknown:
            raise ValueError(f"unknown predicate {unknown[0]!r} (known: {', '.join(OPS)})")
        clean: dict[str, Any] = {}
        for op, value in ops.items():
            clean[op] = _check_op(op, value)
        object.__setattr__(self, "ops", tuple((op, clean[op]) for op in OPS if op in clean))
        self._check_satisfiable()

    def _check_satisfiable(self) -> None:
        ops = dict(self.ops)
        if ops.get("present") is False and len(ops) > 1:
            raise ValueError("present = false cannot be combined with other predicates")
        low = [(v, op == "ge") for op, v in self.ops if op in ("gt", "ge")]
        high = [(v, op == "le") for op, v in self.ops if op in ("lt", "le")]
        for lo, lo_closed in low:
            for hi, hi_closed in high:
                if lo > hi or (lo == hi and not (lo_closed and hi_closed)):
                    raise ValueError("the number range is empty: nothing can match")
        if ops.get("min_length", 0) > ops.get("max_length", math.inf):
            raise ValueError("min_length is above max_length: nothing can match")
        for anchor in ("eq", "in"):
            if anchor not in ops:
                continue
            values = [ops[anchor]] if anchor == "eq" else list(ops[anchor])
            rest = ArgCondition.__new__(ArgCondition)
            object.__setattr__(rest, "ops", tuple(
                (op, v) for op, v in self.ops if op not in (anchor, "present")))
            if rest.ops and not any(rest.matches(v) for v in values):
                raise ValueError(f"no value allowed by {anchor!r} satisfies the other "
                                 "predicates: nothing can match")

    def matches(self, value: Any = _MISSING) -> bool:
        if value is _MISSING:
            return dict(self.ops).get("present") is False
        for op, expected in self.ops:  # noqa: SIM110 - a loop beats all() on this path
            if not _OP_CHECKS[op](value, expected):
                return False
        return True

    def canonical(self) -> dict[str, Any]:
        return {op: list(v) if isinstance(v, tuple) else v for op, v in self.ops}

    def describe(self) -> str:
        return ", ".join(f"{op} {v!r}" for op, v in self.canonical().items())


def _check_op(op: str, value: Any) -> Any:
    if op in VALUE_OPS:
        if _kind(value) == "other":
            raise ValueError(f"{op} needs a string, number or boolean")
        return value
    if op in LIST_OPS:
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set |
                                                             frozenset):
            raise ValueError(f"{op} needs a list of values")
        items = list(value)
        if not items:
            raise ValueError(f"{op} needs at least one value")
        if any(_kind(v) == "other" for v in items):
            raise ValueError(f"{op} holds strings, numbers or booleans only")
        if isinstance(value, set | frozenset):
            items.sort(key=lambda v: (_kind(v), str(v)))
        return tuple(items)
    if op in STRING_OPS:
        if not isinstance(value, str):
            raise ValueError(f"{op} needs a string")
        if op == "glob":
            check_glob(value)
        return value
    if op in NUMBER_OPS:
        if not is_number(value) or not math.isfinite(value):
            raise ValueError(f"{op} needs a finite number")
        return value
    if op in LENGTH_OPS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{op} needs a whole number >= 0")
        return value
    if not isinstance(value, bool):  # present
        raise ValueError("present needs true or false")
    return value


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, str | list) else None


_OP_CHECKS: Mapping[str, Any] = {
    "eq": _same,
    "ne": lambda v, e: _kind(v) == _kind(e) and v != e,
    "in": lambda v, e: any(_same(v, x) for x in e),
    "not_in": lambda v, e: _kind(v) != "other" and not any(_same(v, x) for x in e),
    "prefix": lambda v, e: isinstance(v, str) and v.startswith(e),
    "suffix": lambda v, e: isinstance(v, str) and v.endswith(e),
    "contains": lambda v, e: isinstance(v, str) and e in v,
    "glob": lambda v, e: isinstance(v, str) and fnmatchcase(v, e),
    "lt": lambda v, e: is_number(v) and v < e,
    "le": lambda v, e: is_number(v) and v <= e,
    "gt": lambda v, e: is_number(v) and v > e,
    "ge": lambda v, e: is_number(v) and v >= e,
    "min_length": lambda v, e: (n := _length(v)) is not None and n >= e,
    "max_length": lambda v, e: (n := _length(v)) is not None and n <= e,
    "present": lambda v, e: e is True,
}


def arguments_match(conditions: Mapping[str, ArgCondition],
                    arguments: Mapping[str, Any]) -> str | None:
    """The name of the first argument whose condition fails, or None if all hold."""
    for name, condition in conditions.items():
        if not condition.matches(arguments.get(name, _MISSING)):
            return name
    return None


# -- time windows -------------------------------------------------------------------------
def _zone(name: str) -> tzinfo:
    if name.upper() == "UTC":
        return UTC
    if _OFFSET.match(name):
        sign = -1 if name[0] == "-" else 1
        hours, minutes = int(name[1:3]), int(name[4:6])
        return timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown timezone {name!r} (an IANA name such as "
                         "'Europe/Berlin', 'UTC', or an offset such as '+02:00')") from None


@dataclass(frozen=True, slots=True, init=False)
class TimeWindow:
    """Days of the week and a span of hours, in a timezone; both on the call's local time.

    >>> office = TimeWindow(days=["mon", "tue", "wed", "thu", "fri"], hours="09:00-17:00")
    >>> office.matches(1_767_600_000.0)   # Monday 2026-01-05 08:00 UTC
    False

    ``hours`` may wrap past midnight (``"22:00-06:00"``); ``days`` and ``hours`` are each
    checked on the local date and time of the call, so a night window on ``fri`` covers
    Friday 22:00-24:00 and Friday 00:00-06:00.
    """

    days: tuple[str, ...] | None
    hours: str | None
    timezone: str
    _start: int
    _end: int
    _zone: tzinfo

    def __init__(self, *, days: Any = None, hours: str | None = None,
                 timezone: str = "UTC") -> None:
        if days is None and hours is None:
            raise ValueError("a time window needs days, hours or both")
        day_list: tuple[str, ...] | None = None
        if days is not None:
            if isinstance(days, str) or not all(isinstance(d, str) for d in days):
                raise ValueError("days must be a list of day names")
            given = [d.lower() for d in days]
            bad = [d for d in given if d not in DAYS]
            if bad:
                raise ValueError(f"unknown day {bad[0]!r} (use {', '.join(DAYS)})")
            if not given:
                raise ValueError("days must not be empty: nothing can match")
            day_list = tuple(d for d in DAYS if d in given)
        start = end = 0
        if hours is not None:
            match = _HOURS.match(hours) if isinstance(hours, str) else None
            if match is None:
                raise ValueError(f"hours must look like '09:00-17:30', not {hours!r}")
            start = int(match[1]) * 60 + int(match[2])
            end = int(match[3]) * 60 + int(match[4])
            if end > 24 * 60:
                raise ValueError("hours end at 24:00 at the latest")
            if start == end:
                raise ValueError("hours start and end at the same time: nothing can match")
        if not isinstance(timezone, str):
            raise ValueError("timezone must be a string")
        zone = _zone(timezone)
        for name, value in (("days", day_list), ("hours", hours), ("timezone", timezone),
                            ("_start", start), ("_end", end), ("_zone", zone)):
            object.__setattr__(self, name, value)

    def matches(self, now: float | None) -> bool:
        if now is None:
            return False
        local = datetime.fromtimestamp(now, self._zone)
        if self.days is not None and DAYS[local.weekday()] not in self.days:
            return False
        if self.hours is None:
            return True
        minute = local.hour * 60 + local.minute
        if self._start < self._end:
            return self._start <= minute < self._end
        return minute >= self._start or minute < self._end

    def canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.days is not None:
            out["days"] = list(self.days)
        if self.hours is not None:
            out["hours"] = self.hours
        out["timezone"] = self.timezone
        return out

    def describe(self) -> str:
        parts = [",".join(self.days)] if self.days else []
        if self.hours:
            parts.append(self.hours)
        return " ".join(parts) + f" ({self.timezone})"


__all__ = ["DAYS", "OPS", "ArgCondition", "TimeWindow", "arguments_match", "check_glob",
           "is_glob", "is_number"]
