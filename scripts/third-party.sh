#!/usr/bin/env bash
# Third-party MCP servers (and SDK clients) for interoperability tests, pinned, installed once and cached.
#
#   scripts/third-party.sh list                  # the servers and their pins
#   scripts/third-party.sh install [NAME...]     # install (once) all of them, or some
#   scripts/third-party.sh command NAME          # the argv that starts NAME, one per line
#                                                # (installs it first if needed)
#
# npm servers go into their own folder under the cache with the Node that
# scripts/official-suite.sh installs (or the system's `node`, 18 or newer); Python ones
# into their own virtual environment there. After the first install everything runs
# offline. The cache: ${MCPCORE_THIRD_PARTY_CACHE:-${XDG_CACHE_HOME:-~/.cache}/mcpcore/third-party}.
#
# Adding a server is one line in SERVERS below:
#   name|npm|package@version|bin            the package's bin entry starts the server
#                                            (under scripts/node-loopback.cjs: any TCP
#                                            listen binds 127.0.0.1)
#   name|pypi|requirement[ requirement...]|  `command` prints the venv's python: pass
#                                            your own server script after it
#   name|npm|package@version|                a library without a bin: `command` prints
#                                            env NODE_PATH=… node --require …: pass your
#                                            own (CommonJS) server script after it
# Exit status: 0, or 2 when an install fails (its log is printed).
set -euo pipefail

SERVERS=(
  "server-everything|npm|@modelcontextprotocol/server-everything@2026.8.31|mcp-server-everything"
  "fastmcp|pypi|fastmcp==4.1.6 mcp==2.3.0|"
  "ts-sdk-v2|npm|@modelcontextprotocol/server@2.4.0|"
  "ts-sdk-v2-client|npm|@modelcontextprotocol/client@2.4.0|"
)

here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${MCPCORE_THIRD_PARTY_CACHE:-${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/mcpcore/third-party}"
say() { [ "${MCPCORE_THIRD_PARTY_QUIET:-0}" = 1 ] || printf 'third-party: %s\n' "$*" >&2; }
fail() { printf 'third-party: error: %s\n' "$*" >&2; exit 2; }

entry() {  # entry NAME -> sets kind spec bin
  local line
  for line in "${SERVERS[@]}"; do
    IFS='|' read -r n kind spec bin <<<"$line"
    if [ "$n" = "$1" ]; then return 0; fi
  done
  fail "unknown server '$1' (scripts/third-party.sh list)"
}

slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9._=-' '_'; }

node_bin() {
  local suite="${MCPCORE_SUITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpcore/official-suite}"
  local candidate
  for candidate in "$suite"/*/node_modules/.bin/node; do
    if [ -x "$candidate" ]; then printf '%s\n' "$candidate"; return 0; fi
  done
  if command -v node >/dev/null 2>&1; then
    local major
    major="$(node -p 'process.versions.node.split(".")[0]')"
    if [ "$major" -ge 18 ]; then command -v node; return 0; fi
  fi
  # No usable Node yet: the official suite's installer brings Node 22 (needs npm once).
  "$here/scripts/official-suite.sh" --version >/dev/null
  for candidate in "$suite"/*/node_modules/.bin/node; do
    if [ -x "$candidate" ]; then printf '%s\n' "$candidate"; return 0; fi
  done
  fail "no Node 18+ found, and the official suite's installer brought none"
}

prefix_of() { printf '%s/%s/%s\n' "$cache" "$kind" "$(slug "$spec")"; }

publish_dir() {  # publish_dir DIR PREFIX: one rename; a concurrent install that won stays
  local dir="$1" prefix="$2"
  touch "$dir/.complete"
  if [ -e "$prefix" ] && [ ! -f "$prefix/.complete" ]; then rm -rf "$prefix"; fi
  [ -e "$prefix" ] || mv "$dir" "$prefix" 2>/dev/null || true
  rm -rf "$dir"
  [ -f "$prefix/.complete" ] || fail "could not move the install into $prefix"
}

install_npm() {
  local prefix="$1" work
  command -v npm >/dev/null 2>&1 || fail "npm is needed once, to install $spec"
  mkdir -p "$cache/$kind"
  work="$(mktemp -d "$cache/$kind/.install.XXXXXX")"
  say "installing $spec (once) into $prefix"
  printf '{"name": "mcpcore-third-party", "private": true}\n' >"$work/package.json"
  if ! (cd "$work" && npm install --no-audit --no-fund --no-progress --loglevel=error \
        --save-exact "$spec" >install.log 2>&1); then
    cat "$work/install.log" >&2 || true
    rm -rf "$work"
    fail "npm install $spec failed (its output is above)"
  fi
  rm -f "$work/install.log"
  publish_dir "$work" "$prefix"
}

install_pypi() {
  local prefix="$1" work python
  python="${MCPCORE_THIRD_PARTY_PYTHON:-python3}"
  mkdir -p "$cache/$kind"
  work="$(mktemp -d "$cache/$kind/.install.XXXXXX")"
  say "installing $spec (once) into $prefix"
  # Built aside, then renamed into place: only bin/python is used (never the console
  # scripts, whose shebangs name the build path), and that works after the rename.
  "$python" -m venv "$work/venv" >/dev/null 2>&1 || fail "cannot create a venv with $python"
  # shellcheck disable=SC2086  # the spec is a list of requirements
  if ! "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        $spec >"$work/install.log" 2>&1; then
    cat "$work/install.log" >&2 || true
    rm -rf "$work"
    fail "pip install $spec failed (its output is above)"
  fi
  mv "$work/venv" "$work/ready"
  rm -f "$work/install.log"
  publish_dir "$work/ready" "$prefix"
  rm -rf "$work"
}

ensure() {  # ensure NAME -> prints the install prefix
  entry "$1"
  local prefix
  prefix="$(prefix_of)"
  if [ ! -f "$prefix/.complete" ]; then
    case "$kind" in
      npm) install_npm "$prefix" ;;
      pypi) install_pypi "$prefix" ;;
      *) fail "unknown kind '$kind' for $1" ;;
    esac
  fi
  printf '%s\n' "$prefix"
}

command_of() {
  local prefix
  prefix="$(ensure "$1")"
  entry "$1"
  case "$kind" in
    npm)
      local package="${spec%@*}" script
      if [ -z "$bin" ]; then
        printf '%s\n' env "NODE_PATH=$prefix/node_modules" "$(node_bin)" \
          --require "$here/scripts/node-loopback.cjs"
        return 0
      fi
      script="$("$(node_bin)" -e '
        const p = require(process.argv[1] + "/node_modules/" + process.argv[2] + "/package.json");
        const bin = typeof p.bin === "string" ? p.bin : p.bin[process.argv[3]];
        if (!bin) process.exit(3);
        console.log(require("path").join(process.argv[1], "node_modules", process.argv[2], bin));
      ' "$prefix" "$package" "$bin")" || fail "$package has no bin '$bin'"
      node_bin
      printf '%s\n' "--require" "$here/scripts/node-loopback.cjs" "$script"
      ;;
    pypi) printf '%s\n' "$prefix/bin/python" ;;
  esac
}

case "${1:-}" in
  list)
    for line in "${SERVERS[@]}"; do
      IFS='|' read -r n kind spec bin <<<"$line"
      printf '%s\t%s\t%s\n' "$n" "$kind" "$spec"
    done
    ;;
  install)
    shift
    if [ $# -eq 0 ]; then
      for line in "${SERVERS[@]}"; do set -- "$@" "${line%%|*}"; done
    fi
    for name in "$@"; do ensure "$name" >/dev/null; done
    ;;
  command)
    [ $# -eq 2 ] || fail "usage: scripts/third-party.sh command NAME"
    command_of "$2"
    ;;
  *)
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
