"""A stdio "server" that misbehaves on purpose, for the client's stdio tests.

``python hostile_stdio.py MODE [N]``; every mode answers ``server/discover`` (2026-07-28)
and ``tools/call`` like a tiny server would, except where the mode says otherwise:

* ``banner``: prints a human banner on stdout and never answers (a server started
  without its stdio switch, serving HTTP instead);
* ``crash``: writes a clear error on stderr (after N lines of noise) and exits 3;
* ``flood``: answers ``server/discover``, then before its ``tools/call`` answer writes N
  notifications for no request;
* ``long-line``: answers ``server/discover`` with a line of N bytes;
* ``junk-later``: answers ``server/discover``, then a non-JSON line, then serves.
"""

from __future__ import annotations

import json
import sys


def send(message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def discover_result(pad: str = "") -> dict[str, object]:
    result: dict[str, object] = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                                 "capabilities": {"tools": {}}, "ttlMs": 0,
                                 "cacheScope": "private"}
    if pad:
        result["instructions"] = pad
    return result


def main() -> None:
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if mode == "banner":  # and then serve HTTP, never answering on stdin
        print("Serving MCP at http://127.0.0.1:8000/mcp (press Ctrl-C to stop)", flush=True)
        sys.stdin.read()
        return
    if mode == "crash":
        for i in range(n):
            sys.stderr.write(f"starting, step {i}\n")
        sys.stderr.write("error: MCPCORE_STATE_KEYS is not set; generate a key with "
                         "`mcpcore new-key`\n")
        sys.stderr.flush()
        sys.exit(3)
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        if request["method"] == "server/discover":
            pad = "x" * n if mode == "long-line" else ""
            send({"jsonrpc": "2.0", "id": request["id"], "result": discover_result(pad)})
            if mode == "junk-later":
                print("a stray debug print", flush=True)
        elif request["method"] == "tools/call":
            if mode == "flood":
                method = "notifications/message" if mode == "flood" else ""
                note = json.dumps({"jsonrpc": "2.0", "method": method, "params": {
                    "level": "info", "data": "x" * 64}}) + "\n"
                for _ in range(n):
                    sys.stdout.write(note)
            send({"jsonrpc": "2.0", "id": request["id"], "result": {
                "resultType": "complete", "content": [{"type": "text", "text": "done"}]}})
        else:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
