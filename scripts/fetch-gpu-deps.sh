#!/usr/bin/env bash
# Download the Debian packages the GPU machine lacks (it reaches no package
# registry) into .deps/, which the device tool carries, and the MCP Python
# SDK's wheels (for Pythons 3.10 to 3.13: the machine's is not known here)
# into .deps/wheels/, from which gpu-check makes .mcp-venv/ for the
# mcp_client tests. See gpu-check.
#
# --dsl: instead, the CuTe DSL and cuTile wheels for the machine's Python
# 3.12 (the bundled cases add_cute and softmax_cutile), repacked smaller
# with scripts/repack-wheel.py into .deps-dsl/wheels/: nvidia-cutlass-dsl
# 4.8.1 with its cu13 libraries (the cu12 ones are left out: the DSL loads
# the flavour the driver supports, CUDA 13 there), cuda-tile 1.7.0 with
# tileiras, ptxas and libnvvm 13.4 (their major.minor must agree; 13.4 is
# the first tileiras that builds for Hopper). They come to about 130 MB and
# a device call carries 64 MiB with the tree, so they travel as a tar cut
# in parts of 50 MB (.deps-dsl/part-*, listed with their sha256 in
# .deps-dsl/parts.txt), one part a call; scripts/gpu-dsl-stage gathers
# them on the machine. docs/gpu-dsl.md says how.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --dsl ]; then
  dl() { # DIR SPEC...: cp312 wheels, no dependencies
    local dir=$1
    shift
    python3 -m pip download -q --disable-pip-version-check --no-deps \
      --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
      -d "$dir" "$@"
  }
  raw=.deps-dsl/raw w=.deps-dsl/wheels rp=scripts/repack-wheel.py
  mkdir -p "$raw" "$w"
  dl "$raw" nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
    nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 \
    cuda-tile==1.7.0 nvidia-cuda-tileiras==13.4.92 nvidia-cuda-nvcc==13.4.92 \
    nvidia-nvvm==13.4.92
  repack() { # WHEEL KEEP...: once (LZMA over 200 MB takes minutes)
    local whl=$1
    shift
    [ -f "$w/$(basename "$whl")" ] || python3 $rp "$whl" "$w" "$@"
  }
  cp "$raw"/nvidia_cutlass_dsl-*.whl "$raw"/nvidia_cutlass_dsl_libs_base-*.whl \
    "$raw"/nvidia_cutlass_dsl_libs_core-*.whl "$raw"/cuda_tile-*.whl "$w"/
  repack "$(ls "$raw"/nvidia_cutlass_dsl_libs_cu13-*.whl)" \
    'nvidia_cutlass_dsl/dsl_packages/*' 'nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so' \
    'nvidia_cutlass_dsl/cu13/lib/*.a' 'nvidia_cutlass_dsl/cu13/include/*'
  repack "$(ls "$raw"/nvidia_cuda_tileiras-*.whl)" 'nvidia/cu13/bin/tileiras'
  repack "$(ls "$raw"/nvidia_cuda_nvcc-*.whl)" 'nvidia/cu13/bin/ptxas'
  repack "$(ls "$raw"/nvidia_nvvm-*.whl)" 'nvidia/cu13/lib/libnvvm.so*'
  rm -f .deps-dsl/part-* .deps-dsl/parts.txt
  tar -cf - -C .deps-dsl wheels | split -b 50000000 - .deps-dsl/part-
  (cd .deps-dsl && sha256sum part-* >parts.txt)
  ls -l "$w" .deps-dsl/part-*
  exit 0
fi
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

