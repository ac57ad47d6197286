#!/bin/sh
# Every dynamic symbol the library defines starts with kl_.
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRV]$/ {print $3}' | grep -v '^kl_' || true)
if [ -n "$bad" ]; then
  echo "symbols exported without the kl_ prefix:"; echo "$bad"; exit 1
fi
n=$(nm -D --defined-only "$lib" | awk '$2 == "T"' | wc -l)
[ "$n" -gt 20 ] || { echo "only $n functions exported: is the API missing?"; exit 1; }
echo "ok: $n kl_ functions exported, nothing else"
