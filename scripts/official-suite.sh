#!/usr/bin/env bash
# Run the official MCP conformance suite (npm: @modelcontextprotocol/conformance) on the
# Node it needs, both installed from the npm registry on first use and cached.
#
#   scripts/official-suite.sh --version                  # install (once) and print the version
#   scripts/official-suite.sh server --url http://127.0.0.1:8000/mcp --requirements 2026-07-28
#   scripts/official-suite.sh client --command ".venv/bin/python -m mcpcore.conformance.official_client" \
#       --scenario tools_call --spec-version 2026-07-28
#   scripts/official-suite.sh list --requirements 2026-07-28
#
# Every argument goes to the suite's `conformance` command unchanged, and its exit status
# is ours (2 when the install itself fails).
#
# Only `npm` (any version) is needed, once: it installs `node@22` (an npm package that
# brings the platform's Node binary from the same registry) and the pinned suite into a
# private folder. Later runs use that folder alone, without npm and without a network.
#
# Client mode (`client ...`) starts mock servers that listen on every interface. Where this
# machine allows it (root, or unprivileged user namespaces) the whole run then happens in a
# private network namespace whose only interface is its own loopback, so nothing outside
# the machine can reach those mocks. Set MCPCORE_SUITE_NETNS=0 to run it in the host's
# namespace instead.
#
# Environment:
#   MCPCORE_SUITE_CACHE    cache folder (default: ${XDG_CACHE_HOME:-~/.cache}/mcpcore/official-suite)
#   MCPCORE_SUITE_VERSION  suite version (default: the pin below)
#   MCPCORE_SUITE_NODE     npm version spec of the `node` package (default: 22)
#   MCPCORE_SUITE_NETNS    1 (default): client mode in a private network namespace when possible
#   MCPCORE_SUITE_QUIET=1  no messages about the install on stderr
set -euo pipefail

suite_version="${MCPCORE_SUITE_VERSION:-0.2.0-alpha.12}"
node_spec="${MCPCORE_SUITE_NODE:-22}"
cache="${MCPCORE_SUITE_CACHE:-${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/mcpcore/official-suite}"
# One folder per (suite, node) pin: changing either installs afresh.
prefix="$cache/conformance-$suite_version-node$node_spec"
entry="$prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node="$prefix/node_modules/.bin/node"

say() { [ "${MCPCORE_SUITE_QUIET:-0}" = 1 ] || printf 'official-suite: %s\n' "$*" >&2; }
fail() { printf 'official-suite: error: %s\n' "$*" >&2; exit 2; }

installed() { [ -f "$prefix/.complete" ] && [ -x "$node" ] && [ -f "$entry" ]; }

install() {
  command -v npm >/dev/null 2>&1 || fail "npm is needed once, to install Node $node_spec and the suite"
  mkdir -p "$cache"
  local work
  work="$(mktemp -d "$cache/.install.XXXXXX")"
  # A half-done install never becomes the cached one.
  trap 'rm -rf "$work"' EXIT
  say "installing node@$node_spec and @modelcontextprotocol/conformance@$suite_version (once) into $prefix"
  cat >"$work/package.json" <<JSON
{
  "name": "mcpcore-official-suite",
  "private": true,
  "dependencies": {
    "node": "$node_spec",
    "@modelcontextprotocol/conformance": "$suite_version"
  },
  "allowScripts": { "node": true }
}
JSON
  # The `node` package fetches its binary in an install script: allow scripts even where
  # a user's npm configuration turns them off.
  if ! (cd "$work" && npm install --no-audit --no-fund --no-progress --loglevel=error \
        --ignore-scripts=false >install.log 2>&1); then
    cat "$work/install.log" >&2 || true
    fail "npm install failed (its output is above)"
  fi
  local major
  major="$("$work/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')" ||
    fail "the Node that npm installed does not run here"
  [ "$major" -ge 22 ] || fail "npm installed Node $major; the suite needs 22 or newer"
  "$work/node_modules/.bin/node" "$work/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    --version >"$work/.complete" || fail "the installed suite does not start"
  # Publish with one rename; a concurrent run that got there first wins.
  if [ -e "$prefix" ] && ! installed; then rm -rf "$prefix"; fi
  [ -e "$prefix" ] || mv "$work" "$prefix" 2>/dev/null || true
  installed || fail "could not move the install into $prefix"
  trap - EXIT
  rm -rf "$work"
  say "installed suite $(cat "$prefix/.complete"), node $("$node" --version)"
}

installed || install

# The suite's own children (a client --command, for instance) run on the same Node.
export PATH="$prefix/node_modules/.bin:$PATH"
run=("$node" "$entry" "$@")

private_netns() {
  [ "${MCPCORE_SUITE_NETNS:-1}" = 1 ] || return 1
  command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 || return 1
  local flags=(--net)
  [ "$(id -u)" = 0 ] || flags=(--map-root-user --net)
  # Probe once: containers often forbid new namespaces.
  unshare "${flags[@]}" true 2>/dev/null || return 1
  netns_flags=("${flags[@]}")
}

if [ "${1:-}" = client ] && private_netns; then
  say "client mode: running in a private network namespace (loopback only)"
  exec unshare "${netns_flags[@]}" -- sh -c 'ip link set lo up && exec "$@"' sh "${run[@]}"
fi
if [ "${1:-}" = client ]; then
  say "client mode: no private network namespace here; the mocks listen in the host's namespace"
fi
exec "${run[@]}"
