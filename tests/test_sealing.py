"""Sealed requestState: round trips, rotation, every rejection, and fuzzed tampering."""

from __future__ import annotations

import base64
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore.errors import ErrorCode, InvalidRequestState
from mcpcore.sealing import (
    KeyRing,
    OpenedState,
    Sealer,
    SealingDevModeWarning,
    StateBinding,
    consume_once,
    params_digest,
)
from mcpcore.stores import MemoryStore
from tests.support.budgets import budget

NOW = 1_800_000_000.0
KEY_OLD = bytes(range(32))
KEY_NEW = bytes(range(32, 64))
PARAMS: dict[str, Any] = {"name": "deploy", "arguments": {"env": "prod", "replicas": 3}}
BINDING = StateBinding(
    "https://idp.example|alice", "tools/call", params_digest("tools/call", PARAMS)
)
DATA: dict[str, Any] = {"answers": {"confirm": {"action": "accept", "content": {"ok": True}}}}


def counter_bytes() -> Callable[[int], bytes]:
    """Deterministic 'randomness': distinct bytes on every call."""
    counter = itertools.count(1)
    return lambda n: next(counter).to_bytes(n, "big")


def make_sealer(ring: KeyRing | None = None, **kwargs: Any) -> Sealer:
    kwargs.setdefault("clock", lambda: NOW)
    return Sealer(ring or KeyRing([("k1", KEY_OLD)]), **kwargs)


SEALER = make_sealer()
TOKEN = SEALER.seal(BINDING, round=1, data=DATA)


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


# -- round trip -------------------------------------------------------------------------


def test_seal_then_open_returns_the_claims() -> None:
    opened = SEALER.open(TOKEN, BINDING)
    assert isinstance(opened, OpenedState)
    assert opened.round == 1
    assert opened.data == DATA
    assert opened.issued_at == NOW
    assert opened.expires_at == NOW + 600.0
    assert opened.key_id == "k1"
    assert len(opened.flow_id) == 22  # 128 bits, base64url
    assert len(opened.jti) == 22


def test_flow_id_is_kept_across_rounds_and_jti_is_fresh() -> None:
    first = SEALER.open(SEALER.seal(BINDING, round=1, data={}), BINDING)
    second_token = SEALER.seal(BINDING, round=2, data={"a": 1}, flow_id=first.flow_id)
    second = SEALER.open(second_token, BINDING)
    assert second.flow_id == first.flow_id
    assert second.jti != first.jti
    assert second.round == 2


def test_each_seal_gives_a_different_blob_for_the_same_state() -> None:
    a = SEALER.seal(BINDING, round=1, data=DATA, flow_id="f")
    b = SEALER.seal(BINDING, round=1, data=DATA, flow_id="f")
    assert a != b  # the state changes every round


def test_injected_randomness_makes_sealing_deterministic() -> None:
    a = make_sealer(random_bytes=counter_bytes()).seal(BINDING, round=1, data=DATA)
    b = make_sealer(random_bytes=counter_bytes()).seal(BINDING, round=1, data=DATA)
    assert a == b


def test_blob_is_compact_base64url_and_leaks_no_plaintext() -> None:
    assert set(TOKEN) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    raw = unb64(TOKEN)
    assert raw[0] == 1 and raw[1] == 2 and raw[2:4] == b"k1"
    assert b"alice" not in raw and b"confirm" not in raw
    assert len(TOKEN) < 400


def test_open_uses_the_sealer_clock_by_default() -> None:
    clock = [NOW]
    sealer = make_sealer(clock=lambda: clock[0], ttl_seconds=10)
    token = sealer.seal(BINDING, round=0, data={})
    clock[0] = NOW + 9.999
    sealer.open(token, BINDING)
    clock[0] = NOW + 10
    with pytest.raises(InvalidRequestState, match="expired"):
        sealer.open(token, BINDING)


def test_seal_rejects_oversized_state_as_a_server_bug() -> None:
    sealer = make_sealer(max_blob_bytes=256)
    with pytest.raises(ValueError, match="over max_blob_bytes=256"):
        sealer.seal(BINDING, round=1, data={"big": "x" * 500})


def test_seal_rejects_unencodable_data() -> None:
    with pytest.raises(ValueError, match="not encodable"):
        SEALER.seal(BINDING, round=1, data={"x": object()})


def test_seal_rejects_a_negative_round() -> None:
    with pytest.raises(ValueError, match="round"):
        SEALER.seal(BINDING, round=-1, data={})


def test_sealer_rejects_silly_settings() -> None:
    with pytest.raises(ValueError, match="ttl_seconds"):
        make_sealer(ttl_seconds=0)
    with pytest.raises(ValueError, match="max_blob_bytes"):
        make_sealer(max_blob_bytes=10)


# -- key ring and rotation ----------------------------------------------------------------


def test_rotation_keeps_in_flight_state_valid_then_drops_it() -> None:
    old_token = make_sealer(KeyRing([("k1", KEY_OLD)])).seal(BINDING, round=1, data=DATA)
    rotated = make_sealer(KeyRing([("k2", KEY_NEW), ("k1", KEY_OLD)]))
    assert rotated.open(old_token, BINDING).data == DATA
    new_token = rotated.seal(BINDING, round=2, data=DATA)
    assert rotated.open(new_token, BINDING).key_id == "k2"

    dropped = make_sealer(KeyRing([("k2", KEY_NEW)]))
    assert dropped.open(new_token, BINDING).data == DATA
    with pytest.raises(InvalidRequestState, match=r"unknown key \(id 'k1'\)"):
        dropped.open(old_token, BINDING)


def test_same_kid_with_another_key_fails_authentication() -> None:
    other = make_sealer(KeyRing([("k1", KEY_NEW)]))
    with pytest.raises(InvalidRequestState, match="failed authentication"):
        other.open(TOKEN, BINDING)


def test_key_ring_from_config_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = f" k2:{b64(KEY_NEW)} , k1:{b64(KEY_OLD)}= "
    ring = KeyRing.from_config(spec)
    assert ring.kids == ("k2", "k1") and ring.active_kid == "k2"
    monkeypatch.setenv("MY_KEYS", spec)
    assert KeyRing.from_env("MY_KEYS").kids == ("k2", "k1")
    monkeypatch.delenv("MY_KEYS")
    with pytest.raises(ValueError, match="MY_KEYS is not set"):
        KeyRing.from_env("MY_KEYS")


SECRET_B64 = b64(KEY_OLD)
BAD_SPECS = [
    ("", "empty"),
    (" , ", "empty"),
    (f"nokid{SECRET_B64}", "not of the form"),
    (f"bad kid:{SECRET_B64}", "invalid key id"),
    (f"{'k' * 33}:{SECRET_B64}", "invalid key id"),
    ("k1:" + b64(bytes(16)), "decodes to 16 bytes"),
    ("k1:not*base64!", "not valid base64url"),
    (f"k1:{SECRET_B64},k1:{SECRET_B64}", "duplicate key id"),
]


@pytest.mark.parametrize("spec, message", BAD_SPECS)
def test_bad_key_specs_are_rejected_without_echoing_keys(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        KeyRing.from_config(spec)
    assert SECRET_B64 not in str(info.value)


def test_key_ring_constructor_validates_and_hides_keys() -> None:
    with pytest.raises(ValueError, match="at least one key"):
        KeyRing([])
    with pytest.raises(ValueError, match="exactly 32 bytes"):
        KeyRing({"k": b"short"})
    ring = KeyRing({"a": KEY_OLD})
    assert repr(ring) == "KeyRing(kids=['a'])"
    assert ring.aead("nope") is None


def test_generate_dev_warns_that_fleets_break() -> None:
    with pytest.warns(SealingDevModeWarning, match="another instance"):
        ring = KeyRing.generate_dev()
    sealer = make_sealer(ring)
    assert sealer.open(sealer.seal(BINDING, round=1, data={}), BINDING).round == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SealingDevModeWarning)
        assert KeyRing.generate_dev().active_kid != ring.active_kid


# -- rejections ---------------------------------------------------------------------------


def tamper(token: str, index: int) -> str:
    raw = bytearray(unb64(token))
    raw[index] ^= 0x01
    return b64(bytes(raw))


def with_header(version: int = 1, kid: bytes = b"k1") -> str:
    raw = unb64(TOKEN)
    return b64(bytes((version, len(kid))) + kid + raw[4:])


OTHER_PARAMS = {**PARAMS, "arguments": {"env": "staging", "replicas": 3}}
MISUSE: list[tuple[str, object, StateBinding, float, str]] = [
    (
        "wrong principal",
        TOKEN,
        StateBinding("https://idp.example|mallory", BINDING.method, BINDING.params_digest),
        NOW,
        "issued to a different principal",
    ),
    (
        "wrong method",
        TOKEN,
        StateBinding(BINDING.principal, "prompts/get", BINDING.params_digest),
        NOW,
        "issued for a different method",
    ),
    (
        "other request",
        TOKEN,
        StateBinding(BINDING.principal, BINDING.method, params_digest("tools/call", OTHER_PARAMS)),
        NOW,
        "belongs to a different request",
    ),
    ("expired", TOKEN, BINDING, NOW + 600, "has expired"),
    ("tampered ciphertext", tamper(TOKEN, -20), BINDING, NOW, "failed authentication"),
    ("tampered tag", tamper(TOKEN, -1), BINDING, NOW, "failed authentication"),
    ("tampered nonce", tamper(TOKEN, 5), BINDING, NOW, "failed authentication"),
    ("tampered kid", with_header(kid=b"k0"), BINDING, NOW, "unknown key"),
    ("bad kid", with_header(kid=b"k\xff"), BINDING, NOW, "malformed key id"),
    ("empty kid", with_header(kid=b""), BINDING, NOW, "malformed key id"),
    ("unknown version", with_header(version=2), BINDING, NOW, "unknown format version"),
    ("truncated", TOKEN[:20], BINDING, NOW, "truncated"),
    ("truncated body", b64(unb64(TOKEN)[:30]), BINDING, NOW, "truncated"),
    ("kid longer than blob", b64(b"\x01\xff" + bytes(40)), BINDING, NOW, "truncated"),
    ("cut at tag", b64(unb64(TOKEN)[:-6]), BINDING, NOW, "failed authentication"),
    ("garbage", "this is not a state!", BINDING, NOW, "not base64url"),
    ("padded", TOKEN + "=" * (-len(TOKEN) % 4 or 4), BINDING, NOW, "not base64url"),
    ("non-ascii", TOKEN[:-1] + "é", BINDING, NOW, "not base64url"),
    (
        "impossible length",
        TOKEN + "A" if len(TOKEN) % 4 == 0 else TOKEN[: -(len(TOKEN) % 4)] + "A",
        BINDING,
        NOW,
        "not base64url",
    ),
    ("empty", "", BINDING, NOW, "is empty"),
    ("huge", "A" * 20_000, BINDING, NOW, "too large"),
    ("not a string", {"state": TOKEN}, BINDING, NOW, "must be a string, not dict"),
    ("null", None, BINDING, NOW, "must be a string, not NoneType"),
]


@pytest.mark.parametrize(
    "token, binding, now, message", [m[1:] for m in MISUSE], ids=[m[0] for m in MISUSE]
)
def test_misuse_is_rejected_with_a_clear_message(
    token: object, binding: StateBinding, now: float, message: str
) -> None:
    with pytest.raises(InvalidRequestState, match=message) as info:
        SEALER.open(token, binding, now=now)
    assert info.value.code == ErrorCode.INVALID_PARAMS
    assert "alice" not in info.value.message and SECRET_B64 not in info.value.message


def test_non_canonical_base64_trailing_bits_are_rejected() -> None:
    raw = unb64(TOKEN)
    if len(raw) % 3 == 0:  # no spare bits: make a blob that has some
        raw = unb64(SEALER.seal(BINDING, round=1, data={"pad": "x"}))
    token = b64(raw)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    sibling = token[:-1] + alphabet[alphabet.index(token[-1]) ^ 1]
    with pytest.raises(InvalidRequestState, match="canonical"):
        SEALER.open(sibling, BINDING)


def test_authentic_claims_of_another_version_are_rejected() -> None:
    """A blob whose header is current but whose claims are not (a format bug) is refused."""

    class OldClaims(msgspec.Struct, array_like=True):
        v: int
        principal: str

    aead = KeyRing([("k1", KEY_OLD)]).aead("k1")
    assert aead is not None
    header, nonce = b"\x01\x02k1", bytes(12)
    for claims, message in [
        (msgspec.msgpack.encode(OldClaims(9, "x")), "malformed"),
        (msgspec.msgpack.encode([9, "p", "m", "d", 1, "f", "j", 1.0, 2.0, {}]), "version"),
    ]:
        token = b64(header + nonce + aead.encrypt(nonce, claims, header))
        with pytest.raises(InvalidRequestState, match=message):
            SEALER.open(token, BINDING)


async def test_consume_once_rejects_a_replay_until_the_marker_expires() -> None:
    clock = [0.0]
    store = MemoryStore(clock=lambda: clock[0])
    opened = SEALER.open(TOKEN, BINDING)
    await consume_once(store, opened.jti, opened.expires_at, NOW)
    with pytest.raises(InvalidRequestState, match="has already been used"):
        await consume_once(store, opened.jti, opened.expires_at, NOW)
    # The marker lives for the state's remaining lifetime plus the skew margin.
    clock[0] = 600.0 + 60.0 - 0.001
    assert await store.get("rs:" + opened.jti) == b"1"
    clock[0] = 600.0 + 60.0
    assert await store.get("rs:" + opened.jti) is None


async def test_consume_once_is_per_blob() -> None:
    store = MemoryStore()
    for _ in range(3):
        opened = SEALER.open(SEALER.seal(BINDING, round=1, data={}), BINDING)
        await consume_once(store, opened.jti, opened.expires_at, NOW)


# -- properties ---------------------------------------------------------------------------


def assert_rejected(token: str) -> None:
    try:
        SEALER.open(token, BINDING)
    except InvalidRequestState:
        return
    raise AssertionError(f"mutated state was accepted: {token!r}")


@settings(max_examples=400)
@given(index=st.integers(min_value=0), delta=st.integers(min_value=1, max_value=255))
def test_any_single_byte_mutation_of_the_blob_is_rejected(index: int, delta: int) -> None:
    raw = bytearray(unb64(TOKEN))
    raw[index % len(raw)] = (raw[index % len(raw)] + delta) % 256
    assert_rejected(b64(bytes(raw)))


B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@settings(max_examples=400)
@given(index=st.integers(min_value=0), char=st.characters() | st.sampled_from(B64_ALPHABET))
def test_any_single_character_mutation_of_the_token_is_rejected(index: int, char: str) -> None:
    i = index % len(TOKEN)
    if TOKEN[i] == char:
        return
    assert_rejected(TOKEN[:i] + char + TOKEN[i + 1 :])


@given(cut=st.integers(min_value=1))
def test_any_truncation_is_rejected(cut: int) -> None:
    assert_rejected(TOKEN[: len(TOKEN) - 1 - cut % len(TOKEN)])


@given(tail=st.text(min_size=1, max_size=40) | st.text(B64_ALPHABET, min_size=1, max_size=40))
def test_any_extension_is_rejected(tail: str) -> None:
    assert_rejected(TOKEN + tail)


@given(raw=st.binary(max_size=200))
def test_random_bytes_never_open_and_never_raise_anything_else(raw: bytes) -> None:
    assert_rejected(b64(raw))


@given(text=st.text(max_size=100))
def test_random_text_never_opens_and_never_raises_anything_else(text: str) -> None:
    assert_rejected(text)


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


# Slow properties (generated JSON sealed or digested): tests/support/budgets.py.
@budget(small=25, full=100)
@given(data=st.dictionaries(st.text(), JSON_VALUES, max_size=6), round=st.integers(0, 2**31))
def test_seal_open_is_identity_on_data(data: dict[str, Any], round: int) -> None:
    opened = SEALER.open(SEALER.seal(BINDING, round=round, data=data), BINDING)
    assert opened.data == data
    assert opened.round == round


PARAM_KEYS = st.text(min_size=1, max_size=10).filter(
    lambda k: k not in {"_meta", "inputResponses", "requestState"}
)


@budget(small=25, full=100)
@given(
    params=st.dictionaries(PARAM_KEYS, JSON_VALUES, max_size=5),
    meta=JSON_VALUES,
    responses=JSON_VALUES,
    state=st.text(),
)
def test_digest_ignores_meta_input_responses_and_request_state(
    params: dict[str, Any], meta: Any, responses: Any, state: str
) -> None:
    retry = {**params, "_meta": meta, "inputResponses": responses, "requestState": state}
    assert params_digest("tools/call", retry) == params_digest("tools/call", params)


@budget(small=25, full=100)
@given(
    params=st.dictionaries(PARAM_KEYS, JSON_VALUES, max_size=5),
    key=PARAM_KEYS,
    value=JSON_VALUES,
)
def test_digest_changes_with_any_other_param(params: dict[str, Any], key: str, value: Any) -> None:
    changed = {**params, key: value}
    same = key in params and msgspec.json.encode(params[key], order="sorted") == (
        msgspec.json.encode(value, order="sorted")
    )
    assert (params_digest("tools/call", changed) == params_digest("tools/call", params)) == same


def test_digest_is_key_order_independent_and_covers_the_method() -> None:
    a = {"name": "t", "arguments": {"x": 1, "y": [1, {"b": 2, "a": 1}]}}
    b = {"arguments": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "name": "t"}
    assert params_digest("tools/call", a) == params_digest("tools/call", b)
    assert params_digest("tools/call", a) != params_digest("prompts/get", a)
    assert len(params_digest("tools/call", a)) == 43


@pytest.mark.parametrize("value", ["", "   "])
def test_a_set_but_empty_key_ring_is_refused_at_once(
        value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcore.mrtr import MrtrConfig

    monkeypatch.setenv("MCPCORE_STATE_KEYS", value)
    for make in (MrtrConfig.development, MrtrConfig.from_env, KeyRing.from_env):
        with pytest.raises(ValueError, match="set but empty"):
            make()


def test_an_unset_key_ring_names_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPCORE_STATE_KEYS", raising=False)
    with pytest.raises(ValueError, match="is not set; generate a key with `mcpcore new-key`"):
        KeyRing.from_env()


def test_sealed_claims_are_the_claims_struct_in_msgpack() -> None:
    """``seal`` writes the claims as a tuple of their fields: the plaintext must be the
    very bytes the ``array_like`` claims Struct encodes to, the format every instance
    (and every release still holding state in flight) reads."""
    from mcpcore.sealing import _Claims

    sealer = make_sealer(random_bytes=counter_bytes())
    token = sealer.seal(BINDING, round=3, data=DATA, flow_id="flow")
    raw = unb64(token)
    aead = KeyRing([("k1", KEY_OLD)]).aead("k1")
    assert aead is not None
    header_end = 2 + raw[1]
    plaintext = aead.decrypt(raw[header_end:header_end + 12], raw[header_end + 12:],
                             raw[:header_end])
    opened = sealer.open(token, BINDING)
    assert plaintext == msgspec.msgpack.encode(_Claims(
        1, BINDING.principal, BINDING.method, BINDING.params_digest, 3, "flow",
        opened.jti, NOW, NOW + sealer.ttl_seconds, DATA))
