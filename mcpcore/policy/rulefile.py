"""Rule files: the rule set as TOML a platform team reviews in a pull request.

What lives here: reading a rule file (``load``/``loads``) into a ``Ruleset``, checking
everything about it first and reporting **every** problem with its line
(``RuleFileError``): TOML syntax, unknown keys (with a suggestion), wrong types, invalid
globs and predicates, rules that can never match, rules that contradict or shadow each
other, and files too big to be a rule set. Nothing is loaded partially: a file with
one problem gives no ``Ruleset`` at all, so a server given a bad file does not start.

The format (docs/policy.md has every key)::

    version = 1
    default = "deny"
    allowed_tenants = ["contoso"]

    [categories.destructive]
    scopes = ["mcp:admin"]
    rate_limit = { calls = 5, seconds = 60 }

    [tools.delete_note]
    timeout = 5
    downstream = [{ audience = "https://api.example", scopes = ["notes:write"] }]

    [[rules]]
    id = "confirm-destructive"
    effect = "confirm"
    categories = ["destructive"]

``tomllib`` parses; ``mcpcore.tomlfile`` adds the positions (its ``Locator`` notes the
line of every table header and key), so a problem found in the parsed document points
at the line that holds it. ``Ruleset.canonical()`` writes a rule set back in
this format, sorted and normalised; its SHA-256 is the rule set's ``hash``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpcore.policy.engine import (
    DEFAULT_CATEGORY_SCOPES,
    DEFAULT_GROUPS_CLAIM,
    DEFAULT_SCOPE_HIERARCHY,
    FORMAT_VERSION,
    MATCHERS,
    NON_INTERACTIVE_KINDS,
    OUTCOMES,
    Downstream,
    RateLimit,
    Rule,
    Ruleset,
    ToolSettings,
)
from mcpcore.policy.matchers import ArgCondition, TimeWindow, check_glob
from mcpcore.spelling import did_you_mean
from mcpcore.tomlfile import (
    KeyPath,
    Locator,
    Problem,
    Reader,
    TomlFileError,
    parse_document,
    read_bytes,
)
from mcpcore.tools import CATEGORIES

#: A rule file larger than this is refused before it is parsed.
MAX_BYTES = 1 << 20
#: More rules than this is refused (a rule set is reviewed by people).
MAX_RULES = 2000

_TOP_KEYS = ("version", "default", "allowed_issuers", "allowed_tenants",
             "non_interactive_kinds", "groups_claim", "timeout", "rate_limit",
             "scope_hierarchy", "categories", "tools", "rules")
_RULE_KEYS = ("id", "effect", *MATCHERS, "autonomous")
_LIST_MATCHERS = ("tools", "upstreams", "categories", "issuers", "tenants", "subjects", "groups",
                  "clients", "auth_kinds", "scopes")
_TOOL_KEYS = ("scopes", "rate_limit", "timeout", "downstream")
_CATEGORY_KEYS = ("scopes", "rate_limit")
_LIMIT_KEYS = ("calls", "seconds")
_DOWNSTREAM_KEYS = ("audience", "scopes")
_WINDOW_KEYS = ("days", "hours", "timezone")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_TOOL_PATTERN = re.compile(r"^[A-Za-z0-9_.*?\[\]!^-]{1,128}$")
_RULE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
#: Ids the engine uses for decisions no rule made; a rule may not take them.
RESERVED_IDS = frozenset({"default", "issuer", "tenant", "scope", "rate_limit"})


class RuleFileError(TomlFileError):
    """A rule file that cannot be used; ``problems`` lists every one, with its line.

    ``str(error)`` is one ``source:line: message`` per problem, the way compilers say it.
    """


@dataclass(frozen=True, slots=True)
class RuleFile:
    """A loaded rule file: its ``Ruleset`` and the line each rule starts on."""

    ruleset: Ruleset
    lines: Mapping[str, int]


def load(path: str | Path, *, max_bytes: int = MAX_BYTES,
         max_rules: int = MAX_RULES) -> Ruleset:
    """The ``Ruleset`` in the rule file at ``path``; raises ``RuleFileError``."""
    return read(path, max_bytes=max_bytes, max_rules=max_rules).ruleset


def read(path: str | Path, *, max_bytes: int = MAX_BYTES,
         max_rules: int = MAX_RULES) -> RuleFile:
    """``load``, keeping where each rule is (for ``mcpcore policy explain``)."""
    raw = read_bytes(path, max_bytes=max_bytes, error=RuleFileError)
    return parse(raw, source=str(path), max_bytes=max_bytes, max_rules=max_rules)


def loads(text: str | bytes, *, source: str = "<rules>", max_bytes: int = MAX_BYTES,
          max_rules: int = MAX_RULES) -> Ruleset:
    """The ``Ruleset`` in rule-file ``text``; raises ``RuleFileError``.

    >>> loads('[[rules]]\\nid = "reads"\\neffect = "allow"\\ncategories = ["read"]\\n'
    ...       ).rules[0].id
    'reads'
    """
    return parse(text, source=source, max_bytes=max_bytes, max_rules=max_rules).ruleset


def parse(text: str | bytes, *, source: str = "<rules>", max_bytes: int = MAX_BYTES,
          max_rules: int = MAX_RULES) -> RuleFile:
    """``loads``, keeping where each rule is."""
    document, where = parse_document(text, source=source, max_bytes=max_bytes,
                                     what="a rule file", error=RuleFileError)
    ruleset = _Reader(source, where, max_rules).read(document)
    return RuleFile(ruleset, {rule.id: where.line(("rules", i))
                              for i, rule in enumerate(ruleset.rules)})


# -- reading the document -----------------------------------------------------------------
class _Reader(Reader):
    """Checks a parsed rule file and builds the ``Ruleset``, collecting problems."""

    def __init__(self, source: str, where: Locator, max_rules: int) -> None:
        super().__init__(source, where)
        self.max_rules = max_rules

    def limit(self, path: KeyPath, value: Any, what: str) -> RateLimit | None:
        table = self.table(path, value, what)
        if table is None:
            return None
        self.keys(path, table, _LIMIT_KEYS, what)
        calls, seconds = table.get("calls"), table.get("seconds")
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            self.problem((*path, "calls"), f"{what}: calls must be a whole number >= 1")
            return None
        length = self.seconds((*path, "seconds"), seconds, f"{what}: seconds")
        return None if length is None else RateLimit(calls, length)

    # -- the document --------------------------------------------------------------------
    def read(self, doc: dict[str, Any]) -> Ruleset:
        self.keys((), doc, _TOP_KEYS, "the rule file")
        version = doc.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION or isinstance(version, bool):
            self.problem(("version",), f"version must be {FORMAT_VERSION} "
                                       f"(this mcpcore reads format {FORMAT_VERSION})")
        default = doc.get("default", "deny")
        if default not in OUTCOMES:
            self.problem(("default",), f"default must be one of {', '.join(OUTCOMES)}")
            default = "deny"
        issuers = tenants = None
        if "allowed_issuers" in doc:
            issuers = self.strings(("allowed_issuers",), doc["allowed_issuers"],
                                   "allowed_issuers")
        if "allowed_tenants" in doc:
            tenants = self.strings(("allowed_tenants",), doc["allowed_tenants"],
                                   "allowed_tenants")
        kinds: Iterable[str] = NON_INTERACTIVE_KINDS
        if "non_interactive_kinds" in doc:
            kinds = self.strings(("non_interactive_kinds",), doc["non_interactive_kinds"],
                                 "non_interactive_kinds", allow_empty=True) or kinds
        groups_claim = DEFAULT_GROUPS_CLAIM
        if "groups_claim" in doc:
            groups_claim = self.string(("groups_claim",), doc["groups_claim"],
                                       "groups_claim") or groups_claim
        timeout = None
        if "timeout" in doc:
            timeout = self.seconds(("timeout",), doc["timeout"], "timeout")
        rate_limit = None
        if "rate_limit" in doc:
            rate_limit = self.limit(("rate_limit",), doc["rate_limit"], "rate_limit")
        hierarchy = self.hierarchy(doc)
        cat_scopes, cat_limits = self.categories(doc)
        tools = self.tools(doc)
        rules = self.rules(doc, issuers, tenants)
        if self.problems:
            raise RuleFileError(self.source, self.problems)
        try:
            return Ruleset(rules, default=default, allowed_issuers=issuers,
                           allowed_tenants=tenants, category_scopes=cat_scopes,
                           scope_hierarchy=hierarchy, rate_limit=rate_limit,
                           category_rate_limits=cat_limits, tools=tools, timeout=timeout,
                           non_interactive_kinds=kinds, groups_claim=groups_claim)
        except ValueError as exc:  # pragma: no cover - every case is checked above
            raise RuleFileError(self.source, [Problem(0, str(exc))]) from None

    def hierarchy(self, doc: dict[str, Any]) -> Mapping[str, Iterable[str]]:
        if "scope_hierarchy" not in doc:
            return DEFAULT_SCOPE_HIERARCHY
        table = self.table(("scope_hierarchy",), doc["scope_hierarchy"], "scope_hierarchy")
        out: dict[str, list[str]] = {}
        for scope, implied in (table or {}).items():
            got = self.strings(("scope_hierarchy", scope), implied,
                               f"scope_hierarchy.{scope}", allow_empty=True)
            if got is not None:
                out[scope] = got
        return out

    def categories(self, doc: dict[str, Any]) -> tuple[dict[Any, list[str]], dict[Any, Any]]:
        scopes: dict[Any, list[str]] = {c: sorted(s) for c, s in DEFAULT_CATEGORY_SCOPES.items()}
        limits: dict[Any, RateLimit] = {}
        if "categories" not in doc:
            return scopes, limits
        table = self.table(("categories",), doc["categories"], "categories") or {}
        for cat, entry in table.items():
            path: KeyPath = ("categories", cat)
            if cat not in CATEGORIES:
                self.problem(path, f"unknown category {cat!r}{did_you_mean(cat, CATEGORIES)}; "
                                   f"known: {', '.join(CATEGORIES)}")
                continue
            settings = self.table(path, entry, f"categories.{cat}")
            if settings is None:
                continue
            self.keys(path, settings, _CATEGORY_KEYS, f"categories.{cat}")
            if "scopes" in settings:
                got = self.strings((*path, "scopes"), settings["scopes"],
                                   f"categories.{cat}.scopes", allow_empty=True)
                if got is not None:
                    scopes[cat] = got
            if "rate_limit" in settings:
                limit = self.limit((*path, "rate_limit"), settings["rate_limit"],
                                   f"categories.{cat}.rate_limit")
                if limit is not None:
                    limits[cat] = limit
        return scopes, limits

    def tools(self, doc: dict[str, Any]) -> dict[str, ToolSettings]:
        out: dict[str, ToolSettings] = {}
        if "tools" not in doc:
            return out
        table = self.table(("tools",), doc["tools"], "tools") or {}
        for name, entry in table.items():
            path: KeyPath = ("tools", name)
            what = f"tools.{name}"
            if not _TOOL_NAME.match(name):
                self.problem(path, f"{name!r} is not a tool name (letters, digits, '_', "
                                   "'-', '.'; at most 128)")
                continue
            settings = self.table(path, entry, what)
            if settings is None:
                continue
            self.keys(path, settings, _TOOL_KEYS, what)
            scopes = None
            if "scopes" in settings:
                scopes = self.strings((*path, "scopes"), settings["scopes"],
                                      f"{what}.scopes", allow_empty=True)
            limit = None
            if "rate_limit" in settings:
                limit = self.limit((*path, "rate_limit"), settings["rate_limit"],
                                   f"{what}.rate_limit")
            timeout = None
            if "timeout" in settings:
                timeout = self.seconds((*path, "timeout"), settings["timeout"],
                                       f"{what}.timeout")
            downstream = None
            if "downstream" in settings:
                downstream = self.downstream((*path, "downstream"), settings["downstream"],
                                             f"{what}.downstream")
            out[name] = ToolSettings(None if scopes is None else frozenset(scopes), limit,
                                     timeout, downstream)
        return out

    def downstream(self, path: KeyPath, value: Any, what: str) -> tuple[Downstream, ...] | None:
        if not isinstance(value, list):
            self.problem(path, f"{what} must be a list of {{ audience, scopes }} tables")
            return None
        out: list[Downstream] = []
        seen: set[str] = set()
        for i, entry in enumerate(value):
            item = self.table((*path, i), entry, f"{what}[{i}]")
            if item is None:
                continue
            self.keys((*path, i), item, _DOWNSTREAM_KEYS, f"{what}[{i}]")
            audience = self.string((*path, i, "audience"), item.get("audience"),
                                   f"{what}[{i}].audience")
            scopes = self.strings((*path, i, "scopes"), item.get("scopes", []),
                                  f"{what}[{i}].scopes", allow_empty=True)
            if audience is None or scopes is None:
                continue
            if any(c.isspace() for c in audience):
                self.problem((*path, i), f"{what}[{i}].audience must not contain spaces")
                continue
            if audience.rstrip("/") in seen:
                self.problem((*path, i), f"{what} names {audience!r} twice")
            seen.add(audience.rstrip("/"))
            out.append(Downstream(audience, frozenset(scopes)))
        return tuple(out)

    # -- rules ---------------------------------------------------------------------------
    def rules(self, doc: dict[str, Any], issuers: list[str] | None,
              tenants: list[str] | None) -> list[Rule]:
        if "rules" not in doc:
            return []
        table = doc["rules"]
        if not isinstance(table, list):
            self.problem(("rules",), "rules must be an array of tables ([[rules]])")
            return []
        if len(table) > self.max_rules:
            self.problem(("rules", self.max_rules), f"more than {self.max_rules} rules: "
                                                     "split the policy, or raise the limit")
            return []
        rules: list[Rule] = []
        where: dict[str, int] = {}
        for index, entry in enumerate(table):
            rule = self.rule(index, entry, issuers, tenants)
            if rule is None:
                continue
            if rule.id in where:
                self.problem(("rules", index, "id"), f"rule id {rule.id!r} is already used "
                             f"by the rule on line {where[rule.id]}")
                continue
            where[rule.id] = self.where.line(("rules", index))
            rules.append(rule)
        self.conflicts(rules, where)
        return rules

    def rule(self, index: int, entry: Any, issuers: list[str] | None,
             tenants: list[str] | None) -> Rule | None:
        path: KeyPath = ("rules", index)
        table = self.table(path, entry, f"rules[{index}]")
        if table is None:
            return None
        before = len(self.problems)
        rule_id = table.get("id")
        label = f"rule {rule_id!r}" if isinstance(rule_id, str) else f"rule #{index + 1}"
        self.keys(path, table, _RULE_KEYS, label)
        if not isinstance(rule_id, str) or not _RULE_ID.match(rule_id):
            self.problem((*path, "id") if "id" in table else path,
                         f"{label} needs an id: 1-64 letters, digits, '_', '-', '.', ':'")
        elif rule_id in RESERVED_IDS:
            self.problem((*path, "id"), f"rule id {rule_id!r} is reserved (the engine "
                                        "names its own decisions so)")
        effect = table.get("effect")
        if effect not in OUTCOMES:
            self.problem((*path, "effect") if "effect" in table else path,
                         f"{label}: effect must be one of {', '.join(OUTCOMES)}")
        kwargs: dict[str, Any] = {}
        for name in _LIST_MATCHERS:
            if name in table:
                got = self.strings((*path, name), table[name], f"{label}: {name}")
                if got is not None:
                    kwargs[name] = got
        for name in kwargs.get("tools", []):
            self.tool_pattern((*path, "tools"), name, label)
        for name in kwargs.get("upstreams", []):
            try:
                check_glob(name, what="upstream pattern")
            except ValueError as exc:
                self.problem((*path, "upstreams"), f"{label}: {exc}")
        for cat in kwargs.get("categories", []):
            if cat not in CATEGORIES:
                self.problem((*path, "categories"), f"{label}: unknown category {cat!r}"
                             f"{did_you_mean(cat, CATEGORIES)}; known: {', '.join(CATEGORIES)}")
        for name in ("external", "interactive", "autonomous"):
            if name in table:
                got_bool = self.boolean((*path, name), table[name], f"{label}: {name}")
                if got_bool is not None:
                    kwargs[name] = got_bool
        if "args" in table:
            kwargs["args"] = self.args((*path, "args"), table["args"], label)
        if "window" in table:
            kwargs["window"] = self.window((*path, "window"), table["window"], label)
        self.unreachable(path, label, kwargs, issuers, tenants)
        if kwargs.get("autonomous") and effect != "confirm":
            self.problem((*path, "autonomous"), f"{label}: autonomous applies to confirm "
                                                "rules only")
        if effect == "confirm" and kwargs.get("interactive") is False and not kwargs.get(
                "autonomous"):
            self.problem((*path, "interactive"),
                         f"{label}: a confirm rule for callers that cannot be asked always "
                         "denies them; say effect = \"deny\", or set autonomous = true")
        if len(self.problems) > before:
            return None
        assert isinstance(rule_id, str) and effect in OUTCOMES
        return Rule(rule_id, effect, **kwargs)

    def tool_pattern(self, path: KeyPath, pattern: str, label: str) -> None:
        if not _TOOL_PATTERN.match(pattern):
            self.problem(path, f"{label}: tool pattern {pattern!r} can never match a tool "
                               "name (letters, digits, '_', '-', '.', and * ? [ ])")
            return
        try:
            check_glob(pattern, what="tool pattern")
        except ValueError as exc:
            self.problem(path, f"{label}: {exc}")

    def args(self, path: KeyPath, value: Any, label: str) -> dict[str, ArgCondition] | None:
        table = self.table(path, value, f"{label}: args")
        if table is None:
            return None
        if not table:
            self.problem(path, f"{label}: args is empty; leave it out to match any")
            return None
        out: dict[str, ArgCondition] = {}
        for name, condition in table.items():
            ops = self.table((*path, name), condition, f"{label}: args.{name}")
            if ops is None:
                continue
            try:
                out[name] = ArgCondition(**ops)
            except ValueError as exc:
                self.problem((*path, name), f"{label}: args.{name}: {exc}")
            except TypeError:
                self.problem((*path, name), f"{label}: args.{name}: predicate names must "
                                            "be words")
        return out

    def window(self, path: KeyPath, value: Any, label: str) -> TimeWindow | None:
        table = self.table(path, value, f"{label}: window")
        if table is None:
            return None
        self.keys(path, table, _WINDOW_KEYS, f"{label}: window")
        try:
            return TimeWindow(**{k: v for k, v in table.items() if k in _WINDOW_KEYS})
        except ValueError as exc:
            self.problem(path, f"{label}: window: {exc}")
            return None

    def unreachable(self, path: KeyPath, label: str, kwargs: Mapping[str, Any],
                    issuers: list[str] | None, tenants: list[str] | None) -> None:
        for name, allowed in (("issuers", issuers), ("tenants", tenants)):
            if allowed is None or name not in kwargs:
                continue
            outside = sorted(set(kwargs[name]) - set(allowed))
            if outside and len(outside) == len(set(kwargs[name])):
                self.problem((*path, name), f"{label}: {name} {outside} are all outside "
                             f"allowed_{name}: the rule can never match")

    # -- rules against each other ---------------------------------------------------------
    def conflicts(self, rules: list[Rule], where: Mapping[str, int]) -> None:
        """Rules that can never apply because of another: the same conditions with
        another effect (a contradiction: the deny always wins), the same rule twice, an
        allow or confirm after one that already catches every call it would, or one
        that a deny catches entirely."""
        for i, later in enumerate(rules):
            for earlier in rules[:i]:
                message = _conflict(earlier, later)
                if message is not None:
                    self.problems.append(Problem(where[later.id], message.format(
                        later=later.id, earlier=earlier.id, line=where[earlier.id])))
                    break


def _conflict(earlier: Rule, later: Rule) -> str | None:
    same = earlier.conditions() == later.conditions()
    if same and (earlier.effect, earlier.autonomous) == (later.effect, later.autonomous):
        return "rule {later!r} repeats rule {earlier!r} (line {line})"
    if same and "deny" in (earlier.effect, later.effect):
        return ("rule {later!r} contradicts rule {earlier!r} (line {line}): the same "
                "conditions, one allows or confirms and the other denies (the deny wins)")
    if same:
        return ("rule {later!r} contradicts rule {earlier!r} (line {line}): the same "
                "conditions with another effect, and the first rule always wins")
    if later.effect == "deny":
        if earlier.effect != "deny" and _covers(later, earlier):
            return ("rule {earlier!r} (line {line}) can never apply: the deny rule "
                    "{later!r} matches every call it matches")
        return None
    if _covers(earlier, later):
        if earlier.effect == "deny":
            return ("rule {later!r} can never apply: the deny rule {earlier!r} (line "
                    "{line}) matches every call it matches")
        return ("rule {later!r} can never apply: rule {earlier!r} (line {line}) comes "
                "first and matches every call it matches")
    return None


def _covers(wide: Rule, narrow: Rule) -> bool:
    """Whether ``wide`` surely matches every call ``narrow`` matches (judged on the
    matchers alone; a False answer means "not shown", not "no")."""
    for name in MATCHERS:
        mine, theirs = getattr(wide, name), getattr(narrow, name)
        if mine is None:
            continue
        if theirs is None:
            return False
        if name in ("tools", "upstreams"):
            if not all(any(t == p or (not _has_glob(t) and _fn(t, p)) for p in mine)
                       for t in theirs):
                return False
        elif name == "scopes":  # all of them must be held: fewer required is wider
            if not mine <= theirs:
                return False
        elif name == "groups" or isinstance(mine, frozenset):  # any of them: more listed is wider
            if not theirs <= mine:
                return False
        elif mine != theirs:
            return False
    return True


def _has_glob(name: str) -> bool:
    return any(c in name for c in "*?[")


def _fn(name: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(name, pattern)


__all__ = ["MAX_BYTES", "MAX_RULES", "RESERVED_IDS", "Problem", "RuleFile", "RuleFileError",
           "load", "loads", "parse", "read"]
