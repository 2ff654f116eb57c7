#!/usr/bin/env bash
# Install what the integration tests start for real: redis-server, redis-cli (Debian's
# redis-tools: `redis-cli --cluster create` for the fault tests' Redis Cluster), nginx
# and openssl (test_fleet makes the TLS pair docs/deploying.md shows) as Debian packages,
# npm (to install the official suite's own Node once), the official MCP conformance
# suite itself (scripts/official-suite.sh, cached after the first run), and the
# third-party MCP servers of the client's interoperability matrix
# (scripts/third-party.sh, cached likewise).
# Idempotent, and quiet when everything is present.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: installing ${missing[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  else
    echo "system-deps: missing ${missing[*]} (install them; tests needing them skip loudly," \
      "and fail in CI)" >&2
  fi
fi
if command -v npm >/dev/null 2>&1 || [ -n "$(ls -A "${MCPCORE_SUITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpcore/official-suite}" 2>/dev/null)" ]; then
  MCPCORE_SUITE_QUIET=1 "$here/scripts/official-suite.sh" --version >/dev/null
fi
if command -v npm >/dev/null 2>&1 || [ -n "$(ls -A "${MCPCORE_THIRD_PARTY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpcore/third-party}" 2>/dev/null)" ]; then
  MCPCORE_THIRD_PARTY_QUIET=1 "$here/scripts/third-party.sh" install
fi
