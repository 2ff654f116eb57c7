#!/usr/bin/env bash
# Install what the integration tests start for real: redis-server, nginx (Debian
# packages) and the official MCP conformance suite (npm, via the shared wrapper).
# Idempotent and quiet when everything is present.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: installing ${missing[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "system-deps: missing ${missing[*]} (install them; tests needing them will skip loudly)" >&2
  fi
fi
suite="${MCPCORE_SHARED_DIR:-$here/../shared}/tools/official-conformance.sh"
if [ -x "$suite" ] || [ -f "$suite" ]; then
  MCP_CONFORMANCE_QUIET=1 bash "$suite" --version >/dev/null
else
  echo "system-deps: $suite not found; official-suite tests will skip loudly" >&2
fi
