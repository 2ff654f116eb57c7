"""Client registration, in the order the spec's client-registration page prefers:

1. credentials pre-registered **for this issuer** (``static``: one ``ClientInfo``, or a
   mapping from issuer to ``ClientInfo``). A ``ClientInfo`` without an issuer is bound
   to the first authorization server it is used with and never offered to another;
2. a client ID metadata document (CIMD): when the server advertises
   ``client_id_metadata_document_supported``, the ``client_id`` is the document's https
   URL, and there is no secret;
3. dynamic client registration (RFC 7591) as a fallback, only if the server has a
   ``registration_endpoint``: a JSON body with ``client_name``, ``redirect_uris``,
   ``grant_types`` (``refresh_token`` included, so refresh tokens may be issued),
   ``response_types``, ``token_endpoint_auth_method`` and ``application_type``
   (``native`` for CLIs and desktop apps, ``web`` for remote browser apps; SEP-837);
4. otherwise ``RegistrationError``.

Whatever is chosen is saved in the credential store under the issuer, so the next flow
with the same server reuses it and a flow with another server starts afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from mcpcore.auth.client.credentials import ClientInfo, CredentialStore
from mcpcore.auth.client.discovery import AuthServerMetadata, select
from mcpcore.auth.client.steps import AuthFlow, fetch, json_object
from mcpcore.auth.errors import RegistrationError
from mcpcore.auth.urls import NetworkPolicy

APPLICATION_TYPES = frozenset({"native", "web"})


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """What this client says about itself (RFC 7591 §2) when it registers."""

    client_name: str = "mcpcore client"
    application_type: str = "native"
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    response_types: tuple[str, ...] = ("code",)
    client_uri: str | None = None
    software_id: str | None = None
    software_version: str | None = None

    def __post_init__(self) -> None:
        if self.application_type not in APPLICATION_TYPES:
            raise ValueError("application_type must be 'native' or 'web'")


def check_metadata_document_url(url: str) -> str:
    """A CIMD ``client_id`` must be an https URL with a path, and no fragment, userinfo
    or dot-segments (the spec's client-registration page)."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    if (
        parts.scheme != "https"
        or not parts.hostname
        or parts.path in ("", "/")
        or parts.fragment
        or "#" in url
        or parts.username is not None
        or any(s in (".", "..") for s in segments)
    ):
        raise ValueError(f"{url!r} is not a usable client ID metadata document URL")
    return url


@dataclass
class Registration:
    """How a client gets a ``client_id`` at an authorization server it just discovered.

    >>> Registration(metadata_document_url="https://app.example/client.json")  # doctest: +ELLIPSIS
    Registration(...)
    """

    static: ClientInfo | Mapping[str, ClientInfo] | None = None
    metadata_document_url: str | None = None
    dynamic: bool = True
    metadata: ClientMetadata = field(default_factory=ClientMetadata)
    _bound: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.metadata_document_url is not None:
            check_metadata_document_url(self.metadata_document_url)

    def _static_for(self, issuer: str) -> ClientInfo | None:
        if isinstance(self.static, Mapping):
            return self.static.get(issuer)
        if self.static is None:
            return None
        if self.static.issuer is not None:
            return self.static if self.static.issuer == issuer else None
        if self._bound is None:
            self._bound = issuer
        return self.static if self._bound == issuer else None

    def resolve(
        self,
        metadata: AuthServerMetadata,
        *,
        redirect_uri: str,
        store: CredentialStore,
        network: NetworkPolicy,
    ) -> AuthFlow[ClientInfo]:
        """The registration to use at ``metadata.issuer`` (see the module docstring)."""
        issuer = metadata.issuer
        known = store.client(issuer)
        if known is not None:
            return known
        static = self._static_for(issuer)
        if static is not None:
            info = static.bind(issuer)
        elif self.metadata_document_url and metadata.client_id_metadata_document_supported:
            info = ClientInfo(self.metadata_document_url, auth_method="none", source="cimd",
                              issuer=issuer)
        elif self.dynamic and metadata.registration_endpoint:
            info = yield from register(metadata, self.metadata, redirect_uri=redirect_uri,
                                       network=network)
        else:
            raise RegistrationError(
                f"no way to register at {issuer}: no pre-registered credentials for it, "
                "no client ID metadata document support, no registration endpoint"
            )
        store.save_client(issuer, info)
        return info


def register(
    metadata: AuthServerMetadata,
    client: ClientMetadata,
    *,
    redirect_uri: str,
    network: NetworkPolicy,
) -> AuthFlow[ClientInfo]:
    """Dynamic client registration (RFC 7591 §3.1) at ``metadata.registration_endpoint``."""
    endpoint = metadata.registration_endpoint
    if endpoint is None:
        raise RegistrationError(f"{metadata.issuer} has no registration endpoint")
    # A public client (PKCE) unless the server cannot take one.
    method = select(metadata.auth_methods, ("none", "client_secret_basic", "client_secret_post"))
    body: dict[str, Any] = {
        "client_name": client.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": list(client.grant_types),
        "response_types": list(client.response_types),
        "token_endpoint_auth_method": method or "none",
        "application_type": client.application_type,
    }
    for name in ("client_uri", "software_id", "software_version"):
        if getattr(client, name):
            body[name] = getattr(client, name)
    request = httpx.Request(
        "POST", endpoint, content=msgspec.json.encode(body),
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    response = yield from fetch(request, network, what="client registration")
    document = json_object(response)
    if response.status_code not in (200, 201) or document is None:
        code = document.get("error") if document else None
        raise RegistrationError(
            f"{metadata.issuer} refused the registration ({response.status_code}"
            + (f", {code}" if isinstance(code, str) else "") + ")",
            error=code if isinstance(code, str) else None,
        )
    client_id = document.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise RegistrationError(f"{metadata.issuer}: registration response has no client_id")
    secret = document.get("client_secret")
    agreed = document.get("token_endpoint_auth_method")
    return ClientInfo(
        client_id,
        client_secret=secret if isinstance(secret, str) and secret else None,
        auth_method=agreed if isinstance(agreed, str) else body["token_endpoint_auth_method"],
        source="dcr",
        issuer=metadata.issuer,
    )


__all__ = [
    "APPLICATION_TYPES",
    "ClientMetadata",
    "Registration",
    "check_metadata_document_url",
    "register",
]
