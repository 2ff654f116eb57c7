"""Properties: whatever arrives in the Authorization header or body, an unauthenticated
request never reaches the app, and the answer is a 400 or 401 with a Bearer challenge."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpcore.auth.challenges import bearer_challenge
from mcpcore.auth.config import IssuerConfig
from mcpcore.auth.redaction import redact
from mcpcore.auth.server.resource_server import BearerAuthMiddleware, calls_in
from tests.auth.support import Recorder, make_config

# Keys would come from a closed port: nothing random may ever make us fetch them.
CONFIG = make_config(
    "https://idp.example",
    authorization_servers=(IssuerConfig("https://idp.example", jwks_uri="http://127.0.0.1:9/k"),),
)
b64ish = st.text(alphabet="ABCDEFabcdef0123456789-_.=+/~eyJ", max_size=300)


RECORDER = Recorder()
MIDDLEWARE = BearerAuthMiddleware(RECORDER, config=CONFIG)


def run(header: bytes | None, body: bytes) -> tuple[int, list[Any], dict[bytes, bytes]]:
    recorder, middleware = RECORDER, MIDDLEWARE
    sent: list[dict[str, Any]] = []
    headers = [(b"authorization", header)] if header is not None else []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "query_string": b"",
        "headers": headers,
    }
    asyncio.run(middleware(scope, receive, send))
    return sent[0]["status"], recorder.calls, dict(sent[0]["headers"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.one_of(
        st.none(), st.binary(max_size=200), b64ish.map(lambda t: f"Bearer {t}".encode())
    ),
    body=st.binary(max_size=200),
)
def test_no_valid_token_never_reaches_the_app(header: bytes | None, body: bytes) -> None:
    status, calls, headers = run(header, body)
    assert calls == []
    assert status in (400, 401)
    assert headers[b"www-authenticate"].startswith(b"Bearer resource_metadata=")


@given(st.binary(max_size=500))
def test_calls_in_never_raises(body: bytes) -> None:
    for method, name in calls_in(body):
        assert isinstance(method, str) and (name is None or isinstance(name, str))


@given(st.text(max_size=100), st.sets(st.text(max_size=20), max_size=4))
def test_challenge_values_stay_quoted(description: str, scopes: set[str]) -> None:
    value = bearer_challenge(
        resource_metadata="https://m/x",
        scopes=scopes,
        error="invalid_token",
        error_description=description,
    )
    assert "\n" not in value and "\r" not in value
    # Every quoted-string closes: count unescaped quotes.
    unescaped = value.replace("\\\\", "").replace('\\"', "")
    assert unescaped.count('"') % 2 == 0


@given(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        min_size=20,
        max_size=60,
    )
)
def test_redact_removes_jwt_shaped_and_bearer_values(secret: str) -> None:
    jwt_like = f"eyJ{secret}.{secret}.{secret}"
    for text in (
        f"token {jwt_like} end",
        f"Authorization: Bearer {secret}",
        f"subject_token={secret}&x=1",
        f'{{"client_secret": "{secret}"}}',
    ):
        assert secret not in redact(text)
