#!/usr/bin/env bash
# Download the Debian packages the GPU machine lacks (it reaches no package
# registry) into .deps/, which the device tool carries, and the MCP Python
# SDK's wheels (for Pythons 3.10 to 3.13: the machine's is not known here)
# into .deps/wheels/, from which gpu-check makes .mcp-venv/ for the
# mcp_client tests. See gpu-check.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
pkgs=(libjson-c-dev libjson-c5 libyaml-dev libyaml-0-2 libcmocka-dev libcmocka0
      libcurl4-openssl-dev)
if ! apt-get download "${pkgs[@]}" >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  apt-get download "${pkgs[@]}" >/dev/null
fi
ls -1 *.deb
pip=(python3 -m pip)
[ -x ../.mcp-venv/bin/pip ] && pip=(../.mcp-venv/bin/pip)
for v in 3.10 3.11 3.12 3.13; do
  "${pip[@]}" download -q --disable-pip-version-check -d wheels \
    --only-binary=:all: --python-version "$v" --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 mcp ||
    echo "fetch-gpu-deps: no MCP SDK wheels for Python $v" >&2
done
ls -1 wheels | wc -l | sed 's/$/ wheels in .deps\/wheels/'

