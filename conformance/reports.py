"""Reporters: a run's ``Report`` as JSON (a stable, documented format), JUnit XML (for CI
systems) and one self-contained HTML page a person reads.

Evidence is trimmed to excerpts and credentials are redacted: a report may be attached to
a public CI run, so no ``Authorization`` value, cookie or token-looking string from the
request side is written out.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any

from mcpcore.conformance.model import Outcome, Verdict
from mcpcore.conformance.runner import REPORT_FORMAT, Report
from mcpcore.conformance.transport import Exchange

#: Characters of a body kept in a report.
EXCERPT = 2000
#: Exchanges kept per check.
MAX_EVIDENCE = 12
_SECRET_HEADERS = {"authorization", "cookie", "set-cookie", "proxy-authorization"}
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")


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
    text = _JWT.sub("<jwt redacted>", text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more)"


def _headers(headers: dict[str, str]) -> dict[str, str]:
    out = {}
    for key, value in headers.items():
        if key.lower() in _SECRET_HEADERS:
            scheme = value.split(" ", 1)[0] if " " in value else ""
            out[key] = f"{scheme} <redacted, {len(value)} characters>".strip()
        else:
            out[key] = _JWT.sub("<jwt redacted>", value)
    return out


def exchange_dict(exchange: Exchange) -> dict[str, Any]:
    """One exchange as report evidence."""
    return {
        "label": exchange.label,
        "transport": exchange.transport,
        "request": {"method": exchange.http_method or None, "url": exchange.url or None,
                    "headers": _headers(exchange.request_headers),
                    "body": _excerpt(exchange.request_body)},
        "response": None if exchange.status is None and not exchange.messages else {
            "status": exchange.status, "headers": dict(exchange.response_headers),
            "body": _excerpt(exchange.body)},
        "failure": exchange.failure,
        "elapsed_s": round(exchange.elapsed, 4),
        "schema_problems": exchange.problems[:10],
    }


def outcome_dict(outcome: Outcome) -> dict[str, Any]:
    check = outcome.check
    return {
        "id": check.id, "era": outcome.era, "title": check.title,
        "requirement": check.requirement, "level": check.level.value,
        "verdict": outcome.verdict.value, "expected_failure": outcome.expected,
        "blocking": outcome.blocking, "message": outcome.message, "notes": outcome.notes,
        "spec": check.spec, "tags": sorted(check.tags), "pack": check.pack,
        "duration_s": round(outcome.duration, 4),
        "evidence": [exchange_dict(e) for e in outcome.evidence[:MAX_EVIDENCE]],
    }


def to_dict(report: Report) -> dict[str, Any]:
    """The JSON report as a Python value (see docs/conformance.md for the format)."""
    counts = report.counts()
    return {
        "format": f"mcpcore-conformance/{REPORT_FORMAT}",
        "tool": {"name": "mcpcore conformance", "version": _version()},
        "target": report.target, "transport": report.transport,
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


def to_junit(report: Report) -> str:
    """JUnit XML: one ``<testsuite>`` per era, one ``<testcase>`` per check. A failed MUST
    is a ``<failure>``, a check that could not finish an ``<error>``, skips and baselined
    failures ``<skipped>``; a failed SHOULD passes with its warning in ``<system-out>``."""
    root = ET.Element("testsuites", name="mcpcore conformance", tests=str(len(report.outcomes)),
                      time=f"{report.duration:.3f}")
    totals = {"failures": 0, "errors": 0, "skipped": 0}
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
            detail = f"{check.requirement}\n{outcome.message}\nspec: {check.spec}"
            if outcome.expected and outcome.verdict in (Verdict.FAIL, Verdict.ERROR,
                                                        Verdict.WARN):
                ET.SubElement(case, "skipped", message=f"expected failure: {outcome.message}")
                counts["skipped"] += 1
            elif outcome.verdict is Verdict.FAIL:
                node = ET.SubElement(case, "failure", message=outcome.message[:500],
                                     type=check.level.value)
                node.text = detail
                counts["failures"] += 1
            elif outcome.verdict is Verdict.ERROR:
                node = ET.SubElement(case, "error", message=outcome.message[:500],
                                     type="CheckError")
                node.text = detail
                counts["errors"] += 1
            elif outcome.verdict is Verdict.SKIP:
                ET.SubElement(case, "skipped", message=outcome.message[:500])
                counts["skipped"] += 1
            elif outcome.verdict is Verdict.WARN:
                out = ET.SubElement(case, "system-out")
                out.text = f"WARNING ({check.level.value}): {outcome.message}\n{check.spec}"
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
label{margin-right:1em}
"""
_JS = """
function f(){for(const b of document.querySelectorAll('input[data-v]')){
for(const d of document.querySelectorAll('details[data-v='+b.dataset.v+']')){
d.hidden=!b.checked}}}
"""


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
        "<table><tr><th>era</th><th>detected by</th>"
        + "".join(f"<th>{v.value}</th>" for v in Verdict) + "</tr>",
    ]
    for era in report.eras:
        counts = data["by_era"][era]
        parts.append(f"<tr><td>{_e(era)}</td><td class=muted>{_e(report.detection.get(era, ''))}"
                     "</td>" + "".join(f"<td>{counts[v.value]}</td>" for v in Verdict) + "</tr>")
    verdict = ("PASS: no MUST-level failure" if report.exit_status == 0
               else f"FAIL: {summary['blocking']} MUST-level failure(s)")
    parts.append(f"</table><p><b>{_e(verdict)}</b></p><p>show: " + "".join(
        f"<label><input type=checkbox data-v={v.value} checked onchange=f()> {v.value}</label>"
        for v in Verdict) + "</p>")
    order = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}
    for era in report.eras:
        parts.append(f"<h2>{_e(era)}</h2>")
        mine = [r for r in data["results"] if r["era"] == era]
        for result in sorted(mine, key=lambda r: order[r["verdict"]]):  # problems first
            parts.append(_result_html(result))
    parts.append("</body></html>\n")
    return "".join(parts)


def _result_html(result: dict[str, Any]) -> str:
    expected = " <i>(expected failure)</i>" if result["expected_failure"] else ""
    opened = " open" if result["verdict"] in ("fail", "error") else ""
    verdict = result["verdict"]
    out = [f"<details data-v={verdict}{opened}><summary><span class='v {verdict}'>"
           f"{verdict}</span> <span class=lvl>{_e(result['level'])}</span> "
           f"<b>{_e(result['id'])}</b>: {_e(result['title'])}{expected}</summary>",
           f"<p>{_e(result['requirement'])}<br><a href='{_e(result['spec'])}'>"
           f"{_e(result['spec'])}</a></p>"]
    if result["message"]:
        out.append(f"<p><b>{_e(result['message'])}</b></p>")
    for note in result["notes"]:
        out.append(f"<p class=muted>{_e(note)}</p>")
    for item in result["evidence"]:
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
        out.append(f"<p class=muted>{_e(item['label'])} ({item['elapsed_s']} s)</p>"
                   f"<pre>{_e(chr(10).join(lines))}</pre>")
    out.append("</details>")
    return "".join(out)


__all__ = ["exchange_dict", "outcome_dict", "schema", "to_dict", "to_html", "to_json",
           "to_junit"]
