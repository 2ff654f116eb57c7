"""Sealed MRTR ``requestState``: AEAD encryption, a key ring with rotation, and claims.

Why this module exists (mrtr.mdx): a server that answers ``input_required`` hands the
client an opaque ``requestState`` and gets it back on the retry, possibly at another
instance of the fleet. The spec says to treat it as attacker-controlled, to bind
it to the principal, a short expiry and the originating request, to encrypt it
when it carries earlier answers, with a key id, an issued-at, a format version and a
bounded size, and to carry earlier rounds' answers forward in it (mrtr.mdx, "Server
Requirements" and "Security Considerations"). Tampered, expired, cross-user or
cross-request state is a JSON-RPC error: every
rejection here is ``InvalidRequestState`` (-32602) with a message saying which check
failed and nothing about keys or plaintext.

What lives here: ``KeyRing`` (which keys seal and open), ``StateBinding`` and
``params_digest`` (what a blob is bound to), ``Sealer`` (seal/open) and
``consume_once`` (optional single use through a ``Store``). What must not: handler logic,
capability checks, the shape of ``inputRequests`` (``mrtr.py``), any I/O except the one
store call in ``consume_once``. Clock and randomness are inputs, so tests never sleep.

Blob format (base64url, no padding)::

    version (1 byte, 0x01) | kid length (1 byte) | kid (ASCII) | nonce (12) | ciphertext+tag (16)
    \\__________ associated data: bound by the tag ________/

Choices:

- **AES-256-GCM** (``cryptography``'s ``AESGCM``, i.e. OpenSSL): on servers with AES-NI or
  ARMv8 crypto extensions it is the fastest AEAD OpenSSL offers, and it is the one every
  compliance checklist accepts. ChaCha20-Poly1305 would be the pick for CPUs without AES
  hardware. Nonces are 96 random bits per blob, so a key must seal far fewer than 2**32
  blobs (NIST SP 800-38D); rotate keys (say monthly, or daily for very busy fleets) —
  rotation is cheap because a state lives minutes.
- **msgpack** for the claims (``msgspec.msgpack``): the blob rides in every retry and is
  base64-inflated by 4/3, and msgpack is about a third smaller than JSON for this shape
  and faster to encode/decode; it also round-trips floats exactly (msgspec's JSON writes
  NaN as ``null``). Nobody reads the plaintext but us, so JSON's readability buys nothing.
  Claims are an ``array_like`` Struct: positional, no field names in the blob.

Rotation: put the new key first (it seals), keep the old ones for at least the maximum
state lifetime (``ttl_seconds``) so in-flight flows still open, then drop them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import secrets
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mcpcore.errors import ConfigError, InvalidRequestState

if TYPE_CHECKING:
    from mcpcore.stores.base import Store

#: Format version: the first byte of every blob, and also inside the claims.
FORMAT_VERSION = 1
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
#: Environment variable ``KeyRing.from_env`` reads by default.
DEFAULT_ENV_VAR = "MCPCORE_STATE_KEYS"
#: Keys of the original request params that a retry adds (or that are per-request
#: metadata): excluded from the digest, so the retry digests the same as the original.
UNSALIENT_PARAMS = frozenset({"_meta", "inputResponses", "requestState"})

_KID_RE = re.compile(r"[A-Za-z0-9._-]{1,32}")
_B64URL_RE = re.compile(rb"[A-Za-z0-9_-]*")
_B64URL_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64URL_INDEX = {c: i for i, c in enumerate(_B64URL_ALPHABET)}
_URL_TO_STD_STRICT = bytes.maketrans(b"-_+/=", b"+/!!!")
_TO_URL = bytes.maketrans(b"+/", b"-_")
_MIN_BLOB = 2 + 1 + NONCE_BYTES + TAG_BYTES  # header with a 1-char kid, nonce, tag


class SealingDevModeWarning(UserWarning):
    """Sealing uses a random per-process key: state sealed here opens nowhere else."""


def _b64encode(raw: bytes) -> str:
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URL).rstrip(b"=").decode("ascii")


def _b64decode_key(text: str) -> bytes:
    text = text.strip()
    if not _B64URL_RE.fullmatch(text.rstrip("=").encode("ascii", "replace")):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))


def validate_kid(kid: str) -> str:
    """Return ``kid`` if it is a valid key id (1-32 of ``A-Z a-z 0-9 . _ -``), else raise."""
    if not isinstance(kid, str) or not _KID_RE.fullmatch(kid):
        raise ValueError(
            f"invalid key id {kid!r}: use 1-32 characters from A-Z, a-z, 0-9, '.', '_', '-'"
        )
    return kid


def _header(kid: str) -> bytes:
    """The blob header naming key ``kid``: format version, key id length, key id."""
    return bytes((FORMAT_VERSION, len(kid))) + kid.encode("ascii")


class KeyRing:
    """Ordered key ids → 32-byte AES-256-GCM keys. The first key seals; all keys open.

    >>> ring = KeyRing([("k2", bytes(32)), ("k1", bytes(range(32)))])
    >>> ring.active_kid
    'k2'

    In production build it from configuration (``KeyRing.from_env()`` reads
    ``MCPCORE_STATE_KEYS="k2:<base64url>,k1:<base64url>"``); make a key line with
    ``mcpcore new-key``. The ring never shows key material in its repr
    or in error messages.
    """

    __slots__ = ("_aeads", "_kids", "_openers", "_sealing")

    def __init__(self, keys: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        pairs = list(keys.items()) if isinstance(keys, Mapping) else list(keys)
        if not pairs:
            raise ValueError("a KeyRing needs at least one key")
        aeads: dict[str, AESGCM] = {}
        for kid, key in pairs:
            validate_kid(kid)
            if kid in aeads:
                raise ValueError(f"duplicate key id {kid!r}")
            if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
                raise ValueError(f"key {kid!r} must be exactly {KEY_BYTES} bytes")
            aeads[kid] = AESGCM(bytes(key))
        self._aeads = aeads
        self._kids = tuple(aeads)
        #: Per blob header (format version, key id): the key id and its cipher, so that
        #: ``Sealer.open`` finds both with one look-up of the bytes it holds.
        self._openers = {_header(kid): (kid, aead) for kid, aead in aeads.items()}
        active = self._kids[0]
        # The blob header of the active key with its cipher.
        self._sealing = (_header(active), aeads[active])

    @classmethod
    def from_config(cls, spec: str) -> KeyRing:
        """Parse ``"kid1:<base64url 32 bytes>,kid2:..."`` (first = active key).

        >>> KeyRing.from_config("a:" + "A" * 43 + ", b:" + "B" * 43).kids
        ('a', 'b')
        """
        pairs: list[tuple[str, bytes]] = []
        for n, entry in enumerate(spec.split(","), start=1):
            entry = entry.strip()
            if not entry:
                continue
            kid, sep, encoded = entry.partition(":")
            kid = kid.strip()
            if not sep:
                raise ValueError(f"key entry #{n} is not of the form 'kid:base64url-key'")
            validate_kid(kid)
            try:
                key = _b64decode_key(encoded)
            except (ValueError, binascii.Error):
                raise ValueError(f"key {kid!r} is not valid base64url") from None
            if len(key) != KEY_BYTES:
                raise ValueError(f"key {kid!r} decodes to {len(key)} bytes; it must be {KEY_BYTES}")
            pairs.append((kid, key))
        if not pairs:
            raise ValueError("the key spec is empty: expected 'kid:base64url-key[,...]'")
        return cls(pairs)

    @classmethod
    def from_env(cls, var: str = DEFAULT_ENV_VAR) -> KeyRing:
        """Read the ring from environment variable ``var`` (see ``from_config``);
        ``ConfigError`` (a ``ValueError``) naming ``var`` if it is unset, empty or invalid."""
        if var not in os.environ:
            raise ConfigError(f"{var} is not set; generate a key with `mcpcore new-key`")
        spec = os.environ[var].strip()
        if not spec:
            raise ConfigError(
                f"{var} is set but empty (did the command that was to produce it fail?); "
                "generate a key with `mcpcore new-key`")
        try:
            return cls.from_config(spec)
        except ValueError as exc:
            raise ConfigError(f"{var}: {exc}; generate a key with `mcpcore new-key`, "
                              "or unset it for a per-process development key") from None

    @classmethod
    def generate_dev(cls) -> KeyRing:
        """A random key for this process only, for development and tests.

        Emits ``SealingDevModeWarning``: with several instances (a fleet behind a load
        balancer) or after a restart, a retry reaching another process fails with
        "unknown key". Configure ``MCPCORE_STATE_KEYS`` for anything but a laptop.
        """
        warnings.warn(
            "requestState is sealed with a random per-process key: retries that reach "
            "another instance or a restarted process will be rejected. Set "
            f"{DEFAULT_ENV_VAR} (`mcpcore new-key` makes a key) for multi-instance "
            "deployments.",
            SealingDevModeWarning,
            stacklevel=2,
        )
        return cls([("dev-" + secrets.token_hex(3), secrets.token_bytes(KEY_BYTES))])

    @staticmethod
    def new_key(kid: str | None = None) -> str:
        """A fresh ``kid:base64url-key`` entry for ``MCPCORE_STATE_KEYS``."""
        kid = (
            validate_kid(kid)
            if kid is not None
            else "k" + time.strftime("%Y%m%d") + ("-" + secrets.token_hex(2))
        )
        return f"{kid}:{_b64encode(secrets.token_bytes(KEY_BYTES))}"

    @property
    def active_kid(self) -> str:
        """The key id that seals new blobs."""
        return self._kids[0]

    @property
    def kids(self) -> tuple[str, ...]:
        """All key ids, active first."""
        return self._kids

    def sealing_key(self) -> tuple[bytes, AESGCM]:
        """The blob header naming the active key, and its cipher."""
        return self._sealing

    def aead(self, kid: str) -> AESGCM | None:
        """The cipher for ``kid``, or None if the ring has no such key."""
        return self._aeads.get(kid)

    def __repr__(self) -> str:
        return f"KeyRing(kids={list(self._kids)!r})"


class StateBinding(msgspec.Struct, frozen=True):  # a Struct: made on every MRTR round
    """What a sealed state is bound to: who asked (``Principal.key``), and which request.

    Build it the same way when sealing and when opening::

        binding = StateBinding(principal.key, "tools/call", params_digest("tools/call", params))
    """

    principal: str
    method: str
    params_digest: str


def params_digest(method: str, params: Mapping[str, Any]) -> str:
    """SHA-256 (base64url) over ``method`` and the salient params, canonically encoded.

    Salient = every top-level param except ``_meta``, ``inputResponses`` and
    ``requestState``, so the retry (which adds the latter two, and has its own ``_meta``)
    digests the same as the original request. Canonical = msgspec JSON, keys sorted.
    """
    salient = (params if UNSALIENT_PARAMS.isdisjoint(params)
               else {k: v for k, v in params.items() if k not in UNSALIENT_PARAMS})
    canonical = msgspec.json.encode([method, salient], order="sorted")
    return _b64encode(hashlib.sha256(canonical).digest())


class _Claims(msgspec.Struct, array_like=True, frozen=True):
    """The sealed plaintext; positional on the wire (no field names in the blob)."""

    v: int
    principal: str
    method: str
    digest: str
    round: int
    flow_id: str
    jti: str
    iat: float
    exp: float
    data: dict[str, Any]


_claims_encoder = msgspec.msgpack.Encoder()
_claims_decoder = msgspec.msgpack.Decoder(_Claims)


class OpenedState(msgspec.Struct, frozen=True):  # a Struct: made on every MRTR round
    """A verified ``requestState``: which round, which flow, and the handler's data."""

    round: int
    flow_id: str
    #: Unique per blob: the single-use marker (``consume_once``).
    jti: str
    issued_at: float
    expires_at: float
    data: dict[str, Any]
    #: The key that sealed it (rotation metrics: how many flows still use an old key).
    key_id: str


class Sealer:
    """Seals and opens ``requestState`` blobs bound to a principal and a request.

    >>> sealer = Sealer(KeyRing([("k1", bytes(32))]))
    >>> b = StateBinding("|alice", "tools/call", params_digest("tools/call", {"name": "x"}))
    >>> token = sealer.seal(b, round=1, data={"answers": {"q1": "yes"}})
    >>> sealer.open(token, b).data
    {'answers': {'q1': 'yes'}}

    ``clock`` returns seconds since the epoch (shared across a fleet, unlike a monotonic
    clock); ``random_bytes`` supplies nonces and ids. Both are injectable for tests.
    """

    def __init__(
        self,
        ring: KeyRing,
        *,
        ttl_seconds: float = 600.0,
        max_blob_bytes: int = 16384,
        clock: Callable[[], float] = time.time,
        random_bytes: Callable[[int], bytes] = os.urandom,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        if max_blob_bytes < 128:
            raise ValueError("max_blob_bytes must be at least 128")
        self.ring = ring
        self.ttl_seconds = float(ttl_seconds)
        self.max_blob_bytes = max_blob_bytes
        self._clock = clock
        self._random = random_bytes

    def seal(
        self,
        binding: StateBinding,
        *,
        round: int,
        data: Mapping[str, Any],
        flow_id: str | None = None,
        now: float | None = None,
    ) -> str:
        """Encrypt and authenticate a new state; returns the ``requestState`` string.

        ``flow_id`` stays the same across the rounds of one flow (pass the opened one on);
        a random 128-bit id is made for a new flow. Raises ``ValueError`` (a server bug,
        not a client error) if ``data`` is not encodable or the blob exceeds
        ``max_blob_bytes``.
        """
        if round < 0:
            raise ValueError("round must be >= 0")
        issued = self._clock() if now is None else now
        # One call for nonce, jti and (new flows) flow id: each os.urandom is a syscall.
        if flow_id is None:
            # 33 bytes are 44 base64url characters: the jti and the new flow id, 22
            # characters (132 bits) each, from one encoding.
            rnd = self._random(NONCE_BYTES + 33)
            ids = _b64encode(rnd[NONCE_BYTES:])
            jti, flow_id = ids[:22], ids[22:]
        else:
            rnd = self._random(NONCE_BYTES + 16)
            jti = _b64encode(rnd[NONCE_BYTES:])
        nonce = rnd[:NONCE_BYTES]
        # The claims as the tuple of _Claims' fields in order: msgpack writes it as the
        # very array an ``array_like`` _Claims is, without making the Struct first.
        claims = (FORMAT_VERSION, binding.principal, binding.method, binding.params_digest,
                  round, flow_id, jti, issued, issued + self.ttl_seconds,
                  data if type(data) is dict else dict(data))
        try:
            plaintext = _claims_encoder.encode(claims)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"requestState data is not encodable: {exc}") from None
        header, aead = self.ring._sealing
        sealed = header + nonce + aead.encrypt(nonce, plaintext, header)
        token = _b64encode(sealed)
        if len(token) > self.max_blob_bytes:
            raise ValueError(
                f"sealed requestState is {len(token)} bytes, over max_blob_bytes="
                f"{self.max_blob_bytes}: keep less in the state (or store it and seal a key)"
            )
        return token

    def open(
        self, token: object, binding: StateBinding, *, now: float | None = None
    ) -> OpenedState:
        """Verify and decrypt ``token``; raise ``InvalidRequestState`` saying why not."""
        raw = self._decode(token)
        version = raw[0]
        if version != FORMAT_VERSION:
            raise InvalidRequestState(
                f"requestState has an unknown format version ({version}); "
                f"this server reads version {FORMAT_VERSION}"
            )
        header_end = 2 + raw[1]
        if len(raw) < header_end + NONCE_BYTES + TAG_BYTES:
            raise InvalidRequestState("requestState is truncated")
        header = raw[:header_end]
        # The header names the key: one look-up finds its id and cipher (a header of the
        # ring names a well-formed key id by construction).
        opener = self.ring._openers.get(header)
        if opener is None:
            kid = raw[2:header_end].decode("ascii", "replace")
            if not _KID_RE.fullmatch(kid):
                raise InvalidRequestState("requestState has a malformed key id")
            raise InvalidRequestState(
                f"requestState was sealed with an unknown key (id {kid!r}); it may predate "
                "a key rotation or come from another deployment"
            )
        kid, aead = opener
        nonce_end = header_end + NONCE_BYTES
        try:
            plaintext = aead.decrypt(raw[header_end:nonce_end], raw[nonce_end:], header)
        except InvalidTag:
            raise InvalidRequestState(
                "requestState failed authentication: it was modified or not issued by this server"
            ) from None
        try:
            claims = _claims_decoder.decode(plaintext)
        except msgspec.DecodeError:
            # Authentic but unreadable: only a server-side format bug gets here.
            raise InvalidRequestState("requestState payload is malformed") from None
        if claims.v != FORMAT_VERSION:
            raise InvalidRequestState(
                f"requestState has an unknown format version ({claims.v}); "
                f"this server reads version {FORMAT_VERSION}"
            )
        if claims.principal != binding.principal:
            raise InvalidRequestState("requestState was issued to a different principal")
        if claims.method != binding.method:
            raise InvalidRequestState(
                f"requestState was issued for a different method, not {binding.method}"
            )
        if claims.digest != binding.params_digest:
            raise InvalidRequestState("requestState belongs to a different request")
        current = self._clock() if now is None else now
        if current >= claims.exp:
            raise InvalidRequestState("requestState has expired; start the request again")
        return OpenedState(claims.round, claims.flow_id, claims.jti, claims.iat, claims.exp,
                           claims.data, kid)

    def _decode(self, token: object) -> bytes:
        if not isinstance(token, str):
            raise InvalidRequestState(f"requestState must be a string, not {type(token).__name__}")
        if not token:
            raise InvalidRequestState("requestState is empty")
        if len(token) > self.max_blob_bytes:
            raise InvalidRequestState(
                f"requestState is too large ({len(token)} characters; at most "
                f"{self.max_blob_bytes})"
            )
        try:
            encoded = token.encode("ascii")
        except UnicodeEncodeError:
            raise InvalidRequestState("requestState is not base64url") from None
        # One C pass turns base64url into standard base64 and anything outside the
        # base64url alphabet ("+", "/" and "=" included) into a byte no base64 has;
        # binascii's strict mode then refuses those, and decodes the rest.
        rem = len(encoded) % 4
        try:
            raw = binascii.a2b_base64(
                encoded.translate(_URL_TO_STD_STRICT) + b"=" * (-rem % 4), strict_mode=True
            )
        except binascii.Error:
            raise InvalidRequestState("requestState is not base64url") from None
        # One blob, one spelling: the unused low bits of the last character must be
        # zero, so that no other string opens as this state.
        if rem and _B64URL_INDEX[encoded[-1]] & (0x0F if rem == 2 else 0x03):
            raise InvalidRequestState("requestState is not canonical base64url")
        if len(raw) < _MIN_BLOB:
            raise InvalidRequestState("requestState is truncated")
        return raw


#: Replay markers outlive the state by this much, to cover clock skew between instances.
REPLAY_MARGIN_SECONDS = 60.0


async def consume_once(
    store: Store,
    jti: str,
    expires_at: float,
    now: float,
    *,
    margin: float = REPLAY_MARGIN_SECONDS,
) -> None:
    """Mark state ``jti`` as used; raise ``InvalidRequestState`` if it already was.

    The bindings do not stop a replay within the expiry (mrtr.mdx, "Security
    Considerations"); where a round must be
    consumed at most once, call this after ``Sealer.open``. The marker is a
    set-if-absent key that lives until the state expires (plus ``margin``), so the
    store never keeps markers for states that could not open anyway. A down store
    raises ``StoreUnavailable``: fail closed.
    """
    ttl = max(expires_at - now, 0.0) + margin
    if not await store.set_if_absent("rs:" + jti, b"1", ttl=ttl):
        raise InvalidRequestState("requestState has already been used")


__all__ = [
    "DEFAULT_ENV_VAR",
    "FORMAT_VERSION",
    "REPLAY_MARGIN_SECONDS",
    "KeyRing",
    "OpenedState",
    "Sealer",
    "SealingDevModeWarning",
    "StateBinding",
    "consume_once",
    "params_digest",
    "validate_kid",
]
