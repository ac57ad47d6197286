#!/usr/bin/env bash
# Make sure the build dependencies are here. On Debian/Ubuntu as root, the
# missing packages are installed with apt-get; otherwise the script says
# what to install and fails. `deps.sh --test` also brings what the tests
# use: headless Chromium (the HTML report is loaded in it), pytest,
# valgrind, and the real servers the executor tests start on loopback
# (OpenSSH's client and server; Slurm and munge), and clang-format for the
# source check, and the official MCP Python SDK (pip install mcp, in a
# virtual environment at .mcp-venv/) that the mcp_client test drives kl mcp
# with; `deps.sh --fuzz` brings clang for scripts/fuzz.sh.
set -euo pipefail

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_pc() { pkg-config --exists "$1" 2>/dev/null || missing+=("$2"); }

need_cmd cc gcc
need_cmd c++ g++
need_cmd cmake cmake
need_cmd ninja ninja-build
need_cmd pkg-config pkg-config
need_cmd python3 python3
need_cmd nm binutils
if command -v pkg-config >/dev/null 2>&1; then
  need_pc json-c libjson-c-dev
  need_pc yaml-0.1 libyaml-dev
  need_pc libcurl libcurl4-openssl-dev
  need_pc cmocka libcmocka-dev
else
  missing+=(libjson-c-dev libyaml-dev libcurl4-openssl-dev libcmocka-dev)
fi

if [ "${1:-}" = --fuzz ]; then
  need_cmd clang clang
fi
if [ "${1:-}" = --test ]; then
  command -v chromium >/dev/null 2>&1 ||
    command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
  python3 -m pytest --version >/dev/null 2>&1 ||
    /usr/bin/python3 -m pytest --version >/dev/null 2>&1 ||
    missing+=(python3-pytest)
  need_cmd valgrind valgrind
  need_cmd clang-format clang-format
  need_cmd ssh openssh-client
  need_sbin() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] ||
    missing+=("$2"); }
  need_sbin sshd openssh-server
  need_sbin slurmctld slurmctld
  need_sbin slurmd slurmd
  need_cmd sbatch slurm-client
  need_sbin munged munge
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 ||
    missing+=(python3-venv python3-pip)
fi

# The MCP SDK for the mcp_client test, from PyPI into .mcp-venv/. Where it
# cannot be had (no network, a Python older than 3.10) the reason goes to
# .mcp-venv/UNAVAILABLE and the test skips saying it; nothing else skips it.
mcp_sdk() {
  [ "$mode" = --test ] || return 0
  local venv
  venv="$(cd "$(dirname "$0")/.." && pwd)/.mcp-venv"
  "$venv/bin/python" -c 'import mcp' >/dev/null 2>&1 && return 0
  rm -rf "$venv"
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    mkdir -p "$venv"
    echo "python3 is $(python3 -V 2>&1); the MCP SDK needs 3.10 or later" \
      >"$venv/UNAVAILABLE"
  elif ! { python3 -m venv "$venv" &&
    "$venv/bin/pip" install -q --disable-pip-version-check mcp; } \
    >"$venv.log" 2>&1; then
    mkdir -p "$venv"
    { echo "pip install mcp failed:"; tail -n 5 "$venv.log"; } \
      >"$venv/UNAVAILABLE"
  fi
  rm -f "$venv.log"
  [ -f "$venv/UNAVAILABLE" ] && sed 's/^/deps: /' "$venv/UNAVAILABLE" >&2
  return 0
}
mode=${1:-}

[ ${#missing[@]} -eq 0 ] && { mcp_sdk; exit 0; }

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  mcp_sdk
  exit 0
fi
echo "deps: missing: ${missing[*]}" >&2
echo "deps: install them (e.g. sudo apt-get install ${missing[*]}) and rerun" >&2
exit 1
