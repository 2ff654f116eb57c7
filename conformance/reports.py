"""Reporters: a run's ``Report`` as JSON (a stable, documented format), JUnit XML (for CI
systems), one self-contained HTML page a person reads, and a Markdown summary (for a
pull request or a CI step summary).

Every report opens with why the target could not be audited, when it could not; every
failure shows how to fix it and, first, the exchange the verdict rests on (the
"decisive" one), before the discovery calls that led there. Evidence is trimmed to
excerpts. Credentials never reach this module: the runner scrubs each outcome of every
secret the run held as it is made (``mcpcore.conformance.redaction``).
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any

from mcpcore.conformance.model import CheckOutcome, Verdict
from mcpcore.conformance.runner import REPORT_FORMAT, Report
from mcpcore.conformance.transport import RecordedExchange

#: Characters of a body kept in a report.
EXCERPT = 2000


def _version() -> str:
    from mcpcore import __version__

    return str(__version__)


def schema() -> dict[str, Any]:
    """The JSON Schema of the JSON report (shipped as ``report.schema.json``)."""
    text = resources.files(__package__).joinpath("report.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _excerpt(data: bytes | str, limit: int = EXCERPT) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more)"


def exchange_dict(exchange: RecordedExchange, *, decisive: bool = False) -> dict[str, Any]:
    """One exchange as report evidence."""
    return {
        "label": exchange.label,
        "decisive": decisive,
        "transport": exchange.transport,
        "request": {"method": exchange.http_method or None, "url": exchange.url or None,
                    "headers": dict(exchange.request_headers),
                    "body": _excerpt(exchange.request_body)},
        "response": None if exchange.status is None and not exchange.messages else {
            "status": exchange.status, "headers": dict(exchange.response_headers),
            "body": _excerpt(exchange.body)},
        "failure": exchange.failure,
        "elapsed_s": round(exchange.elapsed, 4),
        "schema_problems": exchange.problems[:10],
    }


def ordered_evidence(outcome: CheckOutcome) -> list[RecordedExchange]:
    """The outcome's exchanges, the decisive one first, the others in the order sent."""
    first = [outcome.decisive] if outcome.decisive is not None else []
    return first + [e for e in outcome.evidence if e is not outcome.decisive]


def outcome_dict(outcome: CheckOutcome) -> dict[str, Any]:
    check = outcome.check
    return {
        "id": check.id, "era": outcome.era, "title": check.title,
        "requirement": check.requirement, "level": check.level.value,
        "verdict": outcome.verdict.value, "expected_failure": outcome.expected,
        "blocking": outcome.blocking, "message": outcome.message, "notes": outcome.notes,
        "fix": check.fix, "spec": check.spec, "tags": sorted(check.tags), "pack": check.pack,
        "duration_s": round(outcome.duration, 4),
        "evidence": [exchange_dict(e, decisive=e is outcome.decisive)
                     for e in ordered_evidence(outcome)],
    }


def to_dict(report: Report) -> dict[str, Any]:
    """The JSON report as a Python value (see docs/conformance.md for the format)."""
    counts = report.counts()
    return {
        "format": f"mcpcore-conformance/{REPORT_FORMAT}",
        "tool": {"name": "mcpcore conformance", "version": _version()},
        "target": report.target, "transport": report.transport,
        "problem": report.problem or None,
        "started": report.started.isoformat(), "duration_s": round(report.duration, 3),
        "eras": report.eras, "detection": report.detection,
        "summary": {"total": len(report.outcomes), **counts,
                    "blocking": len(report.blocking), "exit_status": report.exit_status},
        "by_era": {era: report.counts(era) for era in report.eras},
        "stale_expected": report.stale_expected,
        "results": [outcome_dict(o) for o in report.outcomes],
    }


def to_json(report: Report) -> str:
    return json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"


def headline(report: Report) -> str:
    """The verdict in one line, as every report and the exit summary state it."""
    if report.problem:
        return f"NOT AUDITED: {report.problem}"
    if report.exit_status == 0:
        return "PASS: no MUST-level failure"
    return f"FAIL: {len(report.blocking)} MUST-level failure(s)"


def _exchange_lines(exchange: RecordedExchange) -> list[str]:
    return _lines(exchange_dict(exchange))


def _lines(item: dict[str, Any]) -> list[str]:
    """An exchange (as in the JSON) as text: request line, headers, body; the response
    likewise; what failed; schema problems."""
    request, response = item["request"], item["response"]
    lines = [f"→ {request['method'] or ''} {request['url'] or ''}".rstrip()]
    lines += [f"{k}: {v}" for k, v in request["headers"].items()]
    lines += ["", request["body"], ""]
    if response is not None:
        lines.append(f"← {response['status'] if response['status'] is not None else ''}")
        lines += [f"{k}: {v}" for k, v in response["headers"].items()]
        lines += ["", response["body"]]
    if item["failure"]:
        lines.append(f"!! {item['failure']}")
    for problem in item["schema_problems"]:
        lines.append(f"schema: {problem}")
    return lines


#: Characters XML 1.0 cannot carry (control characters but tab, newline and return).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """``text`` with what XML 1.0 cannot carry shown as ``\\xNN`` (a fuzzed body may hold
    any byte)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _detail(outcome: CheckOutcome) -> str:
    """A failure as plain text: rule, what happened, how to fix, the decisive exchange."""
    check = outcome.check
    parts = [f"rule ({check.level.value}): {check.requirement}", outcome.message]
    if check.fix:
        parts.append(f"how to fix: {check.fix}")
    parts.append(f"spec: {check.spec}")
    if outcome.decisive is not None:
        parts.append(f"the exchange that decided it ({outcome.decisive.label}):\n"
                     + "\n".join(_exchange_lines(outcome.decisive)))
    return _xml("\n".join(parts))


def to_junit(report: Report) -> str:
    """JUnit XML: one ``<testsuite>`` per era, one ``<testcase>`` per check. A failed MUST
    is a ``<failure>``, a check that could not finish an ``<error>``, skips and baselined
    failures ``<skipped>``; a failed SHOULD passes with its warning in ``<system-out>``.
    A target that could not be audited is one ``<error>`` saying why."""
    root = ET.Element("testsuites", name="mcpcore conformance", tests=str(len(report.outcomes)),
                      time=f"{report.duration:.3f}")
    totals = {"failures": 0, "errors": 0, "skipped": 0}
    if report.problem:
        suite = ET.SubElement(root, "testsuite", name="conformance target", tests="1",
                              failures="0", errors="1", skipped="0",
                              timestamp=report.started.isoformat(), hostname="localhost",
                              time=f"{report.duration:.3f}")
        case = ET.SubElement(suite, "testcase", name="target.reachable",
                             classname="conformance.target", time=f"{report.duration:.3f}")
        node = ET.SubElement(case, "error", message=_xml(report.problem[:500]),
                             type="NotAudited")
        node.text = _xml(f"{report.target}: {report.problem}")
        totals["errors"] += 1
        root.set("tests", str(len(report.outcomes) + 1))
    for era in report.eras:
        outcomes = [o for o in report.outcomes if o.era == era]
        suite = ET.SubElement(root, "testsuite", name=f"conformance {era}",
                              tests=str(len(outcomes)), timestamp=report.started.isoformat(),
                              hostname="localhost",
                              time=f"{sum(o.duration for o in outcomes):.3f}")
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="target", value=report.target)
        ET.SubElement(props, "property", name="era", value=era)
        for outcome in outcomes:
            check = outcome.check
            case = ET.SubElement(suite, "testcase", name=check.id,
                                 classname=f"conformance.{era}.{check.id.split('.')[0]}",
                                 time=f"{outcome.duration:.3f}")
            if outcome.expected and outcome.verdict in (Verdict.FAIL, Verdict.ERROR,
                                                        Verdict.WARN):
                ET.SubElement(case, "skipped",
                              message=_xml(f"expected failure: {outcome.message}"))
                counts["skipped"] += 1
            elif outcome.verdict is Verdict.FAIL:
                node = ET.SubElement(case, "failure", message=_xml(outcome.message[:500]),
                                     type=check.level.value)
                node.text = _detail(outcome)
                counts["failures"] += 1
            elif outcome.verdict is Verdict.ERROR:
                node = ET.SubElement(case, "error", message=_xml(outcome.message[:500]),
                                     type="CheckError")
                node.text = _detail(outcome)
                counts["errors"] += 1
            elif outcome.verdict is Verdict.SKIP:
                ET.SubElement(case, "skipped", message=_xml(outcome.message[:500]))
                counts["skipped"] += 1
            elif outcome.verdict is Verdict.WARN:
                out = ET.SubElement(case, "system-out")
                out.text = f"WARNING ({check.level.value}): " + _detail(outcome)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1d1d1f}
h1{font-size:1.5em}table{border-collapse:collapse}td,th{padding:.25em .8em;text-align:left}
.v{font-weight:600;border-radius:3px;padding:0 .4em;color:#fff}
.pass{background:#2e7d32}.fail{background:#c62828}.warn{background:#ef6c00}
.skip{background:#757575}.error{background:#6a1b9a}
details{border:1px solid #ddd;border-radius:4px;margin:.3em 0;padding:.3em .6em}
summary{cursor:pointer}pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:24em;
white-space:pre-wrap;word-break:break-all}.muted{color:#666}.lvl{font-family:monospace}
label{margin-right:1em}.problem{border:2px solid #c62828;padding:.6em;border-radius:4px}
.fix{border-left:4px solid #2e7d32;padding:.2em .6em;background:#f1f8f1}
.decisive{border-left:4px solid #c62828;padding-left:.5em}blockquote{margin:.3em 1em;
color:#333;font-style:italic}
"""
_JS = """
function f(){for(const b of document.querySelectorAll('input[data-v]')){
for(const d of document.querySelectorAll('details[data-v='+b.dataset.v+']')){
d.hidden=!b.checked}}}
"""
#: Problems first, in the order a reader should take them.
_ORDER = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def to_html(report: Report) -> str:
    """A self-contained page (inline CSS and a few lines of script, no external assets)."""
    data = to_dict(report)
    summary = data["summary"]
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width,initial-scale=1'>",
        f"<title>MCP conformance: {_e(report.target)}</title><style>{_CSS}</style>",
        f"<script>{_JS}</script></head><body>",
        f"<h1>MCP conformance report</h1><p><b>{_e(report.target)}</b> "
        f"<span class=muted>({_e(report.transport)}; {_e(data['started'])}; "
        f"{summary['total']} checks in {data['duration_s']} s; mcpcore "
        f"{_e(data['tool']['version'])})</span></p>",
    ]
    if report.problem:
        parts.append(f"<p class=problem><b>NOT AUDITED</b>: {_e(report.problem)}</p>")
        for era, note in report.detection.items():
            parts.append(f"<p class=muted>{_e(era)}: {_e(note)}</p>")
        parts.append("</body></html>\n")
        return "".join(parts)
    parts.append("<table><tr><th>era</th><th>detected by</th>"
                 + "".join(f"<th>{v.value}</th>" for v in Verdict) + "</tr>")
    for era in report.eras:
        counts = data["by_era"][era]
        parts.append(f"<tr><td>{_e(era)}</td><td class=muted>{_e(report.detection.get(era, ''))}"
                     "</td>" + "".join(f"<td>{counts[v.value]}</td>" for v in Verdict) + "</tr>")
    parts.append(f"</table><p><b>{_e(headline(report))}</b></p><p>show: " + "".join(
        f"<label><input type=checkbox data-v={v.value} checked onchange=f()> {v.value}</label>"
        for v in Verdict) + "</p>")
    for era in report.eras:
        parts.append(f"<h2>{_e(era)}</h2>")
        mine = [r for r in data["results"] if r["era"] == era]
        for result in sorted(mine, key=lambda r: _ORDER[r["verdict"]]):
            parts.append(_result_html(result))
    parts.append("</body></html>\n")
    return "".join(parts)


def _evidence_html(item: dict[str, Any]) -> str:
    return (f"<p class=muted>{_e(item['label'])} ({item['elapsed_s']} s)</p>"
            f"<pre>{_e(chr(10).join(_lines(item)))}</pre>")


def _result_html(result: dict[str, Any]) -> str:
    expected = " <i>(expected failure)</i>" if result["expected_failure"] else ""
    verdict = result["verdict"]
    problem = verdict in ("fail", "error", "warn")
    opened = " open" if verdict in ("fail", "error") else ""
    out = [f"<details data-v={verdict}{opened}><summary><span class='v {verdict}'>"
           f"{verdict}</span> <span class=lvl>{_e(result['level'])}</span> "
           f"<b>{_e(result['id'])}</b>: {_e(result['title'])}{expected}</summary>"]
    if result["message"]:
        out.append(f"<p><b>{_e(result['message'])}</b></p>")
    if problem and result["fix"]:
        out.append(f"<p class=fix><b>How to fix:</b> {_e(result['fix'])}</p>")
    out.append(f"<blockquote>{_e(result['requirement'])}</blockquote><p><a "
               f"href='{_e(result['spec'])}'>{_e(result['spec'])}</a></p>")
    for note in result["notes"]:
        out.append(f"<p class=muted>{_e(note)}</p>")
    evidence = result["evidence"]
    decisive = [e for e in evidence if e["decisive"]]
    others = [e for e in evidence if not e["decisive"]]
    for item in decisive:
        out.append(f"<div class=decisive><p><b>The exchange that decided it</b></p>"
                   f"{_evidence_html(item)}</div>")
    if others and decisive:
        out.append(f"<details><summary>{len(others)} other exchange(s) of this check "
                   "(discovery, setup)</summary>"
                   + "".join(_evidence_html(i) for i in others) + "</details>")
    else:
        out += [_evidence_html(i) for i in others]
    out.append("</details>")
    return "".join(out)


def to_markdown(report: Report) -> str:
    """A short Markdown summary: the verdict, then each problem with its rule, how to fix
    it and the exchange that decided it (for a pull request or a CI step summary)."""
    out = [f"# MCP conformance: {report.target}", "", f"**{headline(report)}**", ""]
    if report.problem:
        out += [f"- {era}: {note}" for era, note in report.detection.items()]
        return "\n".join(out) + "\n"
    out += ["| era | " + " | ".join(v.value for v in Verdict) + " |",
            "|---|" + "---:|" * len(Verdict)]
    for era in report.eras:
        counts = report.counts(era)
        out.append(f"| {era} | " + " | ".join(str(counts[v.value]) for v in Verdict) + " |")
    problems = sorted((o for o in report.outcomes if o.verdict in (
        Verdict.FAIL, Verdict.ERROR, Verdict.WARN)), key=lambda o: _ORDER[o.verdict.value])
    for outcome in problems:
        check = outcome.check
        tag = " (expected failure)" if outcome.expected else ""
        out += ["", f"## {outcome.verdict.value.upper()} {check.level.value} {outcome.era} "
                f"`{check.id}`{tag}", "", outcome.message.replace("\n", " "), "",
                f"> {check.requirement}", "", f"Spec: {check.spec}"]
        if check.fix:
            out += ["", f"**How to fix:** {check.fix}"]
        if outcome.decisive is not None:
            fence = "````"
            out += ["", f"The exchange that decided it ({outcome.decisive.label}):", "",
                    fence, *_exchange_lines(outcome.decisive)[:60], fence]
    return "\n".join(out) + "\n"


__all__ = ["exchange_dict", "headline", "ordered_evidence", "outcome_dict", "schema",
           "to_dict", "to_html", "to_json", "to_junit", "to_markdown"]
