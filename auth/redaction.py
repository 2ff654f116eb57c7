"""Keep tokens, codes, secrets and ID-JAGs out of logs and error messages.

Our own code never formats a credential into a message; this module is the safety net
for everything else (httpx debug logs, exception text from libraries, a careless
``logger.info(request.headers)``). ``RedactingFilter`` rewrites each record before any
handler sees it; ``fingerprint`` gives a stable, non-reversible handle to correlate a
token across log lines without logging it.
"""

from __future__ import annotations

import hashlib
import logging
import re

#: Three base64url segments: a JWS (access token, ID token, ID-JAG). Two dots are enough.
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"(?i)\b(bearer|basic|dpop)\s+[A-Za-z0-9._~+/=-]+")
_FORM = re.compile(
    r"(?i)\b(access_token|refresh_token|id_token|subject_token|actor_token|assertion|"
    r"client_secret|client_assertion|code|code_verifier|token|password)"
    r"(=|\"\s*:\s*\"|'\s*:\s*')[^&\s\"',]+"
)
_AUTH_HEADER = re.compile(r"(?i)(authorization['\"]?\s*[:=,]\s*\(?['\"]?)[^'\"\n]+")
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """Replace anything that looks like a credential.

    >>> redact("POST /token code=abc123&client_secret=s3cr3t")
    'POST /token code=[redacted]&client_secret=[redacted]'
    """
    text = _JWT.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    return _FORM.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def fingerprint(token: str | bytes) -> str:
    """A short SHA-256 handle for a credential: safe to log, useless to replay."""
    data = token.encode() if isinstance(token, str) else token
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs the formatted message and any exception text.

    >>> logging.getLogger("httpx").addFilter(RedactingFilter())
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            # Format the traceback now, scrubbed, so handlers print our text instead.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_redaction(*loggers: str) -> RedactingFilter:
    """Attach one ``RedactingFilter`` to ``auth``, ``mcpcore.auth``, ``authlib`` (its debug
    log prints issued tokens), ``httpx``, ``httpcore``, ``uvicorn``
    (and any extra logger names) and to every handler on the root logger."""
    flt = RedactingFilter()
    for name in ("auth", "mcpcore.auth", "authlib", "httpx", "httpcore", "uvicorn",
                 "uvicorn.access", *loggers):
        logger = logging.getLogger(name)
        if flt not in logger.filters:
            logger.addFilter(flt)
    for handler in logging.getLogger().handlers:
        handler.addFilter(flt)
    return flt


__all__ = ["REDACTED", "RedactingFilter", "fingerprint", "install_redaction", "redact"]
