"""Keeps the credentials the auditor holds out of everything it writes.

An audit report is made to be shared (attached to a public CI run, sent to the server's
authors), so no secret the run held may appear in it: the ``--bearer`` token or the one
``--oauth`` obtained, the client secret, tokens given in the audit settings or minted
during the run, keys and proofs. One ``Redactor`` per run knows them all (by value, not
by shape) and is applied at one place: the runner turns each finished check into an
``CheckOutcome`` through ``Redactor.outcome`` (its message, notes and a scrubbed copy of every
exchange), so the progress display, the JSON, JUnit, HTML and Markdown reports and the
exit summary only ever see redacted text. The CLI also scrubs its own error lines and
the log records of the libraries it drives.

Each secret is found in every form it travels in: as is, percent-encoded (a query
string), Base64 and Base64url (a Basic header, a cookie), JSON- and HTML-escaped, and as
a fragment of at least ``FRAGMENT`` characters at either end (a body excerpt cut in the
middle of a token). Anything shaped like a JWT, and the values of credential headers
(``Authorization``, ``Cookie``, ``DPoP``, …), are redacted whatever they hold.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import html
import json
import logging
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

if TYPE_CHECKING:
    from mcpcore.conformance.model import CheckOutcome
    from mcpcore.conformance.transport import RecordedExchange

#: Shortest value treated as a secret (shorter ones would blank out ordinary words).
MIN_SECRET = 6
#: Shortest end of a secret that counts as a leak when the rest was cut off.
FRAGMENT = 12
#: Bytes of a body kept in a redacted exchange (reports show 2,000 characters of it).
KEPT = 64 * 1024
#: Request and response headers whose values are credentials, whatever they hold.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie",
                            "dpop", "x-api-key", "api-key"})
#: Setting names under which every string is a credential (``expired_token``,
#: ``oauth.client_secret``, a JWK's private parameters under ``…_key``, …).
_SECRET_NAME = re.compile(r"token|secret|password|passwd|key|jwk|proof|credential|assertion"
                          r"|cookie|authorization", re.I)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
JWT_REDACTED = "<jwt redacted>"

_CURRENT: ContextVar[Redactor | None] = ContextVar("conformance_redactor", default=None)


class Redactor:
    """The secrets of one run, and how to scrub text, exchanges and outcomes of them."""

    def __init__(self) -> None:
        self._forms: dict[str, str] = {}     #: every form of every secret → its label
        self._raw: dict[str, str] = {}       #: each secret as given → its label

    # -- learning secrets ----------------------------------------------------------------
    def add(self, value: str | None, label: str) -> None:
        """Treat ``value`` as a secret, called ``label`` where it is replaced."""
        if not isinstance(value, str) or len(value) < MIN_SECRET or value in self._raw:
            return
        self._raw[value] = label
        for form in forms(value):
            if len(form) >= MIN_SECRET:
                self._forms.setdefault(form, label)

    def add_settings(self, settings: Any, where: str = "audit setting") -> None:
        """Every string under a credential-looking name in a JSON-like value."""
        def walk(node: Any, path: str, secret: bool) -> None:
            if isinstance(node, Mapping):
                for key, child in node.items():
                    walk(child, f"{path}.{key}" if path else str(key),
                         secret or bool(_SECRET_NAME.search(str(key))))
            elif isinstance(node, list | tuple):
                for index, child in enumerate(node):
                    walk(child, f"{path}[{index}]", secret)
            elif secret and isinstance(node, str):
                self.add(node, f"{where} {path}")
                scheme, _, credential = node.partition(" ")   # "Bearer <token>"
                if credential and re.fullmatch(r"[A-Za-z][\w-]*", scheme):
                    self.add(credential.strip(), f"{where} {path}")

        walk(settings, "", False)

    def add_url(self, url: str | None, label: str) -> None:
        """The credentials a URL can carry: its userinfo (a user name may be a token, as
        in ``https://TOKEN@host``) and every query value (``?api_key=...``)."""
        with contextlib.suppress(ValueError):
            parts = urlsplit(url or "")
            self.add(parts.password, f"{label} password")
            self.add(parts.username, f"{label} user name")
            for name, value in parse_qsl(parts.query, keep_blank_values=True):
                self.add(value, f"{label} query parameter {name}")

    @property
    def secrets(self) -> dict[str, str]:
        """Each secret as given, and its label (for tests and diagnostics)."""
        return dict(self._raw)

    # -- scrubbing -------------------------------------------------------------------------
    def text(self, value: str) -> str:
        """``value`` with every known secret, and anything shaped like a JWT, replaced."""
        if not value:
            return value
        for form in sorted((f for f in self._forms if f in value), key=len, reverse=True):
            value = value.replace(form, f"<redacted: {self._forms[form]}>")
        value = self._fragments(value)
        return _JWT.sub(JWT_REDACTED, value)

    def _fragments(self, value: str) -> str:
        """Cut-off ends of secrets: a prefix or suffix of at least ``FRAGMENT`` chars."""
        spans: list[tuple[int, int, str]] = []
        for secret, label in self._raw.items():
            if len(secret) <= FRAGMENT:
                continue
            head, tail = secret[:FRAGMENT], secret[-FRAGMENT:]
            start = value.find(head)
            while start != -1:
                end = start + FRAGMENT
                while end < len(value) and end - start < len(secret) \
                        and value[end] == secret[end - start]:
                    end += 1
                spans.append((start, end, label))
                start = value.find(head, start + 1)
            end = value.find(tail)
            while end != -1:
                stop, begin = end + FRAGMENT, end
                while begin > 0 and stop - begin < len(secret) \
                        and value[begin - 1] == secret[len(secret) - (stop - begin) - 1]:
                    begin -= 1
                spans.append((begin, stop, label))
                end = value.find(tail, end + 1)
        if not spans:
            return value
        out, position = [], 0
        for start, end, label in sorted(spans):
            if end <= position:
                continue
            start = max(start, position)
            out.append(value[position:start])
            out.append(f"<redacted: part of {label}>")
            position = end
        out.append(value[position:])
        return "".join(out)

    def header(self, name: str, value: str) -> str:
        if name.lower() not in SECRET_HEADERS:
            return self.text(value)
        scheme, _, credential = value.partition(" ")
        if not credential or not re.fullmatch(r"[A-Za-z][\w-]*", scheme):
            scheme, credential = "", value
        label = self._forms.get(credential.strip())
        what = f"<redacted: {label}>" if label else f"<redacted, {len(value)} characters>"
        return f"{scheme} {what}".strip()

    def data(self, value: bytes | str) -> bytes:
        """A body, scrubbed. A JSON body is read first, so a secret spelled with JSON
        escapes (``\\u0074ok...``) is found as the text it decodes to; the body is then
        kept as the scrubbed JSON (the bytes a report shows, not the bytes sent)."""
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        text = text[:KEPT]
        if "\\u" in text:
            with contextlib.suppress(ValueError, RecursionError):
                decoded = json.dumps(json.loads(text), ensure_ascii=False)
                if decoded != text:
                    text = decoded
        return self.text(text).encode("utf-8")

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        """A JSON-RPC message with every string scrubbed (a new value when it changed)."""
        try:
            dumped = json.dumps(message, ensure_ascii=False)
        except (TypeError, ValueError):
            return {}
        cleaned = self.text(dumped)
        if cleaned == dumped:
            return message
        try:
            value = json.loads(cleaned)
        except ValueError:
            return {"redacted": cleaned[:KEPT]}
        return value if isinstance(value, dict) else {"redacted": cleaned[:KEPT]}

    def exchange(self, exchange: RecordedExchange) -> RecordedExchange:
        """A scrubbed copy: safe to render, to keep in a report, to print."""
        messages = [self.message(m) for m in exchange.messages]
        response = None
        if exchange.response is not None:
            index = next((i for i, m in enumerate(exchange.messages)
                          if m is exchange.response), None)
            response = messages[index] if index is not None else self.message(
                exchange.response)
        return dataclasses.replace(
            exchange, label=self.text(exchange.label), url=self.text(exchange.url),
            request_body=self.data(exchange.request_body), body=self.data(exchange.body),
            # A header's name is the peer's text too (a hostile server may echo a token
            # in one): both are scrubbed.
            request_headers={self.text(k): self.header(k, v)
                             for k, v in exchange.request_headers.items()},
            response_headers={self.text(k): self.header(k, v) for k, v in
                              exchange.response_headers.items()},
            messages=messages, response=response,
            failure=self.text(exchange.failure) if exchange.failure else exchange.failure,
            problems=[self.text(p) for p in exchange.problems])

    def outcome(self, outcome: CheckOutcome) -> CheckOutcome:
        """The outcome as reports may show it: message, notes and evidence scrubbed (the
        decisive exchange keeps its place)."""
        copies = {id(e): self.exchange(e) for e in outcome.evidence}
        decisive = copies.get(id(outcome.decisive)) if outcome.decisive is not None else None
        return dataclasses.replace(
            outcome, message=self.text(outcome.message),
            notes=[self.text(n) for n in outcome.notes],
            evidence=[copies[id(e)] for e in outcome.evidence],
            decisive=decisive if decisive is not None else (
                self.exchange(outcome.decisive) if outcome.decisive is not None else None))


def forms(secret: str) -> list[str]:
    """The ways ``secret`` is spelled on the wire and in reports."""
    raw = secret.encode("utf-8")
    out = [secret, quote(secret, safe=""), quote_plus(secret), quote(secret, safe="/"),
           json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1],
           html.escape(secret, quote=True)]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(raw).decode("ascii")
        out += [encoded, encoded.rstrip("=")]
    out += [raw.hex(), raw.hex().upper(), secret.lower(), secret.upper(),
            "".join(f"&#{ord(c)};" for c in secret)]
    return list(dict.fromkeys(out))


def current() -> Redactor:
    """The redactor of the run in progress (a fresh, empty one outside any run)."""
    return _CURRENT.get() or Redactor()


def register(value: str | None, label: str) -> None:
    """Tell the run in progress about a secret it now holds (a token just minted)."""
    redactor = _CURRENT.get()
    if redactor is not None:
        redactor.add(value, label)


@contextlib.contextmanager
def use(redactor: Redactor) -> Iterator[Redactor]:
    """Make ``redactor`` the current one for the block (and the tasks it starts)."""
    token = _CURRENT.set(redactor)
    try:
        yield redactor
    finally:
        _CURRENT.reset(token)


class LogScrubber(logging.Filter):
    """Scrubs log records of the run's secrets (on top of the pattern-based
    ``mcpcore.auth.RedactingFilter``, which knows shapes, not values)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self.redactor.text(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = self.redactor.text(
                logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


@contextlib.contextmanager
def scrub_logs(redactor: Redactor, *names: str) -> Iterator[None]:
    """For the block, scrub the records of the loggers the suite drives (and of every
    handler on the root logger) of ``redactor``'s secrets and of credential shapes."""
    from mcpcore.auth import RedactingFilter

    filters: list[logging.Filter] = [RedactingFilter(), LogScrubber(redactor)]
    targets: list[logging.Filterer] = [logging.getLogger(n) for n in (
        "mcpcore", "auth", "authlib", "httpx", "httpcore", "asyncio", *names)]
    targets += logging.getLogger().handlers
    if logging.lastResort is not None:
        targets.append(logging.lastResort)
    for target in targets:
        for item in filters:
            target.addFilter(item)
    try:
        yield
    finally:
        for target in targets:
            for item in filters:
                target.removeFilter(item)


__all__ = ["FRAGMENT", "JWT_REDACTED", "KEPT", "MIN_SECRET", "SECRET_HEADERS", "LogScrubber",
           "Redactor", "current", "forms", "register", "scrub_logs", "use"]
