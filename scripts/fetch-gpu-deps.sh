#!/usr/bin/env bash
# Download the Debian packages the GPU machine lacks (it reaches no package
# registry) into .deps/, which the device tool carries. See gpu-check.
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
