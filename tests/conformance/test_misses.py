"""The defects an earlier version of the suite missed (issue 24, "Defects it does not
catch"), one planted defect per class of miss in tests/conformance/broken_server.py: the
right check catches each (fail for a MUST, warn for a SHOULD, exit 1 for a MUST) and the
correct build passes it. A check whose rule was not exercised skips with the reason.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from mcpcore.conformance import Options, run_suite
from mcpcore.conformance.checks.audit_state import field_edits, readable
from mcpcore.conformance.model import Level, Verdict
from mcpcore.conformance.tokens import b64url
from tests.conformance.broken_server import DEFECTS, FILE_TOOL, broken_app
from tests.conformance.test_checks import PACK_DEFECTS

MRTR_TOOLS = ["test_input_required_result_tampered_state",
              "test_input_required_result_elicitation"]
#: What a security team's run names: the MRTR tools, and a tool that changes a list.
SETTINGS: dict[str, Any] = {"mrtr_tools": MRTR_TOOLS,
                            "listen_trigger": {"name": "test_trigger_tool_change"}}

#: class of miss → (planted defect, the check that must catch it, audit packs).
MISSES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "cannot-fail: capability check": ("capabilities-assumed",
                                      "meta.capabilities-not-inferred", ()),
    "cannot-fail: listen": ("listen-unsolicited", "listen.only-requested", ()),
    "too gentle: readable requestState": ("state-readable", "audit.state-tamper", ("auth",)),
    "never exercised: elicitation answers": ("elicitation-unvalidated",
                                             "mrtr.elicitation-validated", ()),
    "never exercised: input_required": ("input-required-as-complete",
                                        "results.input-required", ()),
    "masked: Host behind Origin": ("host-only-unchecked", "http.host-rebinding", ()),
    "masked: body size behind a bad cursor": ("no-body-limit", "http.body-limit", ()),
}
DESTRUCTIVE = {"destructive.path-traversal": "file-path-traversal",
               "destructive.arguments": "file-tool-crash"}
PACK_DEFECTS.update(DESTRUCTIVE)


def test_every_planted_defect_exists() -> None:
    used = {d for d, _, _ in MISSES.values()} | set(DESTRUCTIVE.values())
    assert used <= set(DEFECTS)


@pytest.mark.parametrize("miss", sorted(MISSES))
async def test_the_miss_is_caught(miss: str) -> None:
    defect, check_id, audit = MISSES[miss]
    report = await run_suite(app=broken_app({defect}), checks=[check_id], audit=audit,
                             options=Options(audit=SETTINGS))
    assert report.outcomes, check_id
    level = report.outcomes[0].check.level
    wanted = Verdict.FAIL if level is Level.MUST else Verdict.WARN
    verdicts = {o.era: (o.verdict, o.message) for o in report.outcomes}
    assert wanted in {v for v, _ in verdicts.values()}, (miss, verdicts)
    assert report.exit_status == (1 if level is Level.MUST else 0)


@pytest.mark.parametrize("miss", sorted(MISSES))
async def test_the_correct_build_passes(miss: str) -> None:
    from examples.everything import app

    _, check_id, audit = MISSES[miss]
    report = await run_suite(app=app, checks=[check_id], audit=audit,
                             options=Options(audit=SETTINGS))
    assert {o.verdict for o in report.outcomes} == {Verdict.PASS}, [
        (o.key, o.verdict.value, o.message) for o in report.outcomes]


# -- why each is caught ------------------------------------------------------------------
async def test_capability_check_calls_the_named_tools() -> None:
    """The read-only tools need nothing under ``capabilities-assumed``; the tool named
    in mrtr_tools asks for elicitation the request never declared."""
    report = await run_suite(app=broken_app({"capabilities-assumed"}),
                             checks=["meta.capabilities-not-inferred"],
                             options=Options(audit=SETTINGS))
    [outcome] = report.outcomes
    assert "asked for ['elicitation/create']" in outcome.message
    assert outcome.message.split()[0] in MRTR_TOOLS


async def test_capability_check_skips_when_no_tool_needs_a_capability() -> None:
    """A server whose only tool needs no capability: the rule was not exercised, which
    is a skip with the reason, not a pass."""
    from mcpcore import Server, StreamableHTTP

    server = Server("plain", "1.0")

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        """Echoes."""
        return text

    report = await run_suite(app=StreamableHTTP(server), checks=["meta.capabilities-not-inferred"])
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.SKIP
    assert "needed a client capability" in outcome.message


async def test_listen_check_skips_when_nothing_arrives() -> None:
    from examples.everything import app

    report = await run_suite(app=app, checks=["listen.only-requested"])
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.SKIP and "listen_trigger" in outcome.message


async def test_listen_check_sees_a_filter_ignored_after_the_trigger() -> None:
    """A server delivering every list change to every listener: the prompts-only
    listener gets tools/list_changed once the trigger runs."""
    report = await run_suite(app=broken_app({"listen-filter-ignored"}),
                             checks=["listen.only-requested"], options=Options(audit=SETTINGS))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL
    assert "notifications/tools/list_changed arrived" in outcome.message


async def test_garbling_alone_misses_a_readable_state() -> None:
    """The old probes (a flipped character, a suffix) break the base64 and are refused
    for that; the field edit is what the server accepts."""
    report = await run_suite(app=broken_app({"state-readable"}), audit=["auth"],
                             checks=["audit.state-tamper"], options=Options(audit=SETTINGS))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL
    assert "with field" in outcome.message and "base64url JSON" in outcome.message


async def test_input_required_finding_is_specific() -> None:
    report = await run_suite(app=broken_app({"input-required-as-complete"}),
                             checks=["results.input-required"])
    [outcome] = report.outcomes
    assert "but resultType is 'complete'" in outcome.message


async def test_body_limit_still_catches_a_crash_and_skips_without_a_control() -> None:
    report = await run_suite(app=broken_app({"big-body-500"}), checks=["http.body-limit"],
                             spec="2026-07-28")
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.WARN and "HTTP 500" in outcome.message


async def test_host_probe_sends_no_origin() -> None:
    from examples.everything import app

    report = await run_suite(app=app, checks=["http.host-rebinding"], spec="2026-07-28")
    [outcome] = report.outcomes
    for exchange in outcome.evidence:
        assert "origin" not in {k.lower() for k in exchange.request_headers}


# -- readable states ---------------------------------------------------------------------
PAYLOAD = {"tool": "delete_file", "user": "alice", "admin": False, "round": 1}


@pytest.mark.parametrize("encoding, state", [
    ("a JWT payload", b64url(b'{"alg":"HS256","typ":"JWT"}') + "." + b64url(
        json.dumps(PAYLOAD).encode()) + ".c2lnbmF0dXJl"),
    ("plain JSON", json.dumps(PAYLOAD)),
    ("base64url JSON", b64url(json.dumps(PAYLOAD).encode())),
    ("base64 JSON", base64.b64encode(json.dumps({**PAYLOAD, "x": "??>"}).encode()).decode()),
])
def test_a_readable_state_is_decoded_and_rewritten(encoding: str, state: str) -> None:
    found = readable(state)
    assert found is not None
    name, payload, encode = found
    assert name == encoding and payload["user"] == "alice"
    edits = {key: new for key, _, new in field_edits(payload)}
    assert edits["admin"] is True and edits["round"] == 2 and edits["user"] != "alice"
    again = readable(encode({**payload, "admin": True}))
    assert again is not None and again[0] == encoding and again[1]["admin"] is True
    if encoding == "a JWT payload":
        assert encode(payload).split(".")[2] == "c2lnbmF0dXJl"   # signature kept as it was


@pytest.mark.parametrize("state", ["v1.Zm9vYmFy.c2ln", "opaque-AEAD-ciphertext-Zm9v",
                                   base64.urlsafe_b64encode(bytes(range(40))).decode()])
def test_an_opaque_state_is_left_alone(state: str) -> None:
    assert readable(state) is None


# -- the destructive mode ----------------------------------------------------------------
def destructive_settings(scratch: Path) -> dict[str, Any]:
    return {"destructive": {"tools": [{"name": FILE_TOOL["name"], "arguments": {
        "action": "read", "path": "notes.txt"}}], "scratch_dir": str(scratch)},
        "mrtr_tools": MRTR_TOOLS}


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    root = tmp_path / "scratch"
    root.mkdir()
    (root / "notes.txt").write_text("scratch notes", encoding="utf-8")
    return root


async def test_destructive_checks_pass_on_a_confined_file_tool(scratch: Path) -> None:
    report = await run_suite(app=broken_app(set(), scratch=scratch), audit=["destructive"],
                             checks=["destructive.*"],
                             options=Options(audit=destructive_settings(scratch)))
    assert {o.check.id: o.verdict for o in report.outcomes} == dict.fromkeys(
        DESTRUCTIVE, Verdict.PASS), [(o.key, o.message) for o in report.outcomes]
    assert sorted(p.name for p in scratch.parent.iterdir()) == ["scratch"]


@pytest.mark.parametrize("check_id", sorted(DESTRUCTIVE))
async def test_destructive_check_fails_on_its_defect(check_id: str, scratch: Path) -> None:
    report = await run_suite(app=broken_app({DESTRUCTIVE[check_id]}, scratch=scratch),
                             audit=["destructive"], checks=[check_id],
                             options=Options(audit=destructive_settings(scratch)))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL, outcome.message
    assert report.exit_status == 1
    assert not [p for p in scratch.parent.iterdir() if p.name != "scratch"], \
        "the check left a file outside the scratch directory"


async def test_a_write_outside_the_scratch_directory_is_found(scratch: Path) -> None:
    settings = destructive_settings(scratch)
    settings["destructive"]["tools"][0]["arguments"] = {"action": "write", "path": "a.txt",
                                                        "content": "x"}
    report = await run_suite(app=broken_app({"file-path-traversal"}, scratch=scratch),
                             audit=["destructive"], checks=["destructive.path-traversal"],
                             options=Options(audit=settings))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL and "outside the scratch directory" in \
        outcome.message, outcome.message


async def test_destructive_checks_skip_without_settings() -> None:
    from examples.everything import app

    report = await run_suite(app=app, audit=["destructive"], checks=["destructive.*"])
    assert {o.verdict for o in report.outcomes} == {Verdict.SKIP}


async def test_destructive_tools_are_never_called_by_other_packs(scratch: Path) -> None:
    """Without --audit destructive the scratch tool is never called, whatever the
    settings say."""
    app = broken_app({"file-path-traversal"}, scratch=scratch)
    report = await run_suite(app=app, audit=["auth"], options=Options(
        audit=destructive_settings(scratch)), spec="2026-07-28")
    called = [e for o in report.outcomes for e in o.evidence
              if FILE_TOOL["name"] in e.label and e.method == "tools/call"]
    assert not called
    assert not any(o.check.id.startswith("destructive.") for o in report.outcomes)


def test_cli_refuses_destructive_without_its_settings(
        capsys: pytest.CaptureFixture[str]) -> None:
    from mcpcore.conformance.cli import main

    assert main(["--url", "http://127.0.0.1:9/mcp", "--audit", "destructive"]) == 2
    err = capsys.readouterr().err
    assert "--audit destructive" in err and "--audit-config" in err and err[-1] == "\n"
    assert err.count("\n") == 1


# -- a check that met only requests for input, or nothing to judge, skips ------------------
ASK = {"resultType": "input_required", "requestState": "conformance-test-state",
       "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
           "mode": "form", "message": "Sure?",
           "requestedSchema": {"type": "object", "properties": {}}}}}}


def answering(methods: dict[str, Any]) -> Any:
    """A Wrapper answer: ``methods[name]`` (a result, or a callable of the request body
    returning one or ``None``) for those methods, everything else passed through."""
    def answer(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
        if not isinstance(body, dict) or body.get("method") not in methods:
            return None
        reply = methods[body["method"]]
        reply = reply(body) if callable(reply) else {"jsonrpc": "2.0", "id": body.get("id"),
                                                     "result": reply}
        return None if reply is None else (200, "application/json", reply)
    return answer


async def verdicts_of(app: Any, checks: list[str], **kw: Any) -> dict[str, tuple[Verdict, str]]:
    report = await run_suite(app=app, spec="2026-07-28", checks=checks, **kw)
    return {o.check.id: (o.verdict, o.message + " | " + "; ".join(o.notes))
            for o in report.outcomes}


async def test_reads_and_prompts_that_only_ask_for_input_are_a_skip() -> None:
    """Every prompts/get and resources/read answered input_required: no GetPromptResult
    or contents was judged, so both checks skip saying so (they used to pass)."""
    from tests.conformance.test_false_alarms import Wrapper

    got = await verdicts_of(Wrapper(answering({"prompts/get": ASK, "resources/read": ASK})),
                            ["prompts.get", "resources.read"])
    assert {k: v for k, (v, _) in got.items()} == {"prompts.get": Verdict.SKIP,
                                                   "resources.read": Verdict.SKIP}, got
    for _, message in got.values():
        assert "asked for input (input_required)" in message


async def test_an_empty_contents_array_and_refused_made_up_arguments_are_not_judged() -> None:
    """An existing resource may have no content (server/resources calls the empty array
    ambiguous, not wrong), and a prompt may refuse the argument values the suite made up
    with -32602: neither is a failure; the rest is still judged."""
    from tests.conformance.test_false_alarms import Wrapper

    def refuse_made_up(body: dict[str, Any]) -> dict[str, Any] | None:
        if "conformance" not in (body.get("params") or {}).get("arguments", {}).values():
            return None
        return {"jsonrpc": "2.0", "id": body.get("id"), "error": {
            "code": -32602, "message": "arg1 must be one of the known values"}}

    empty = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public", "contents": []}
    got = await verdicts_of(Wrapper(answering({"resources/read": empty,
                                               "prompts/get": refuse_made_up})),
                            ["prompts.get", "resources.read"])
    assert got["resources.read"][0] is Verdict.SKIP, got
    assert "empty contents array" in got["resources.read"][1]
    assert got["prompts.get"][0] is Verdict.PASS, got
    assert "refused the made-up argument values with -32602" in got["prompts.get"][1]


async def test_tools_without_annotations_or_a_second_listing_are_a_skip() -> None:
    """tools.annotations with no annotated tool, and tools.deterministic-order when the
    repeated listings are not results, had nothing to judge."""
    from mcpcore import Server, StreamableHTTP
    from tests.conformance.test_false_alarms import Wrapper

    server = Server("plain", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        """Echoes."""
        return text

    got = await verdicts_of(StreamableHTTP(server), ["tools.annotations"])
    assert got["tools.annotations"][0] is Verdict.SKIP
    assert "no tool carries annotations" in got["tools.annotations"][1]

    calls = {"n": 0}

    def busy_after_the_first(body: dict[str, Any]) -> dict[str, Any] | None:
        calls["n"] += 1
        return None if calls["n"] == 1 else {"jsonrpc": "2.0", "id": body.get("id"), "error": {
            "code": -32603, "message": "busy"}}

    got = await verdicts_of(Wrapper(answering({"tools/list": busy_after_the_first})),
                            ["tools.deterministic-order"])
    assert got["tools.deterministic-order"][0] is Verdict.SKIP, got


async def test_a_destructive_tool_that_always_asks_for_confirmation_is_a_skip(
        scratch: Path) -> None:
    """A file tool that answers every call with input_required (a confirmation form)
    never ran with the traversal paths: destructive.path-traversal skips, saying so."""
    from tests.conformance.test_false_alarms import Wrapper

    def confirm(body: dict[str, Any]) -> dict[str, Any] | None:
        if (body.get("params") or {}).get("name") != FILE_TOOL["name"]:
            return None
        return {"jsonrpc": "2.0", "id": body.get("id"), "result": ASK}

    wrapper = Wrapper(answering({"tools/call": confirm}))
    wrapper.app = broken_app({"file-path-traversal"}, scratch=scratch)
    got = await verdicts_of(wrapper, ["destructive.path-traversal"], audit=["destructive"],
                            options=Options(audit=destructive_settings(scratch)))
    verdict, message = got["destructive.path-traversal"]
    assert verdict is Verdict.SKIP and "asked for input (input_required)" in message, message


@pytest.mark.parametrize("mislabel", ["input-required-as-complete", "missing-result-type"])
async def test_a_wrong_result_type_does_not_hide_unvalidated_form_answers(mislabel: str) -> None:
    """A result that asks for a form under the wrong resultType (or none) is another
    check's finding (results.input-required, results.result-type); the form it asks for
    is still answered with values that break it, and their use is still found."""
    report = await run_suite(app=broken_app({"elicitation-unvalidated", mislabel}),
                             checks=["mrtr.elicitation-validated"],
                             options=Options(audit=SETTINGS))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.WARN, outcome.message
    assert "was used: the call completed" in outcome.message
