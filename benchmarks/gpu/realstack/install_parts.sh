#!/usr/bin/env bash
# On the GPU machine: collect the parts build_real_stage.sh made (one or more per call, carried as
# .device-gpu/stack/pN) into /root/stash/parts, and once all are there and the sha256 matches, unpack them to
# /tmp/site (vLLM 0.26.0 + the GPU kernel packages) and /tmp/sdsite (the HTTP server's wheels).
# Idempotent while the machine stays warm. Usage: install_parts.sh PART_DIR...   Exit 0 when installed,
# 4 while parts are missing.
set -euo pipefail
ST=/root/stash/parts; mkdir -p "$ST"
for d in "$@"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do [ -f "$f" ] && cp "$f" "$ST/"; done
done
[ -f /tmp/site/.installed_real ] && { echo "real stack already installed in /tmp/site"; exit 0; }
[ -f "$ST/parts.count" ] || { echo "NEED p1 (parts.count)"; exit 4; }
n=$(cat "$ST/parts.count"); missing=""
for i in $(seq 0 $((n-1))); do [ -f "$ST/stack.part$i" ] || missing="$missing p$((i+1))"; done
[ -z "$missing" ] || { echo "NEED$missing"; exit 4; }
t=$(date +%s)
want=$(cut -d' ' -f1 "$ST/parts.sha256"); got=$(cat $(for i in $(seq 0 $((n-1))); do echo "$ST/stack.part$i"; done) | sha256sum | cut -d' ' -f1)
[ "$want" = "$got" ] || { echo "SHA MISMATCH: $got != $want"; exit 5; }
rm -rf /tmp/site /tmp/sdsite
if command -v zstd >/dev/null; then UNZ="zstd -d -q -c"
else
  [ -d /root/stash/zs/zstandard ] || python3 -m pip install -q --no-index --no-deps --target /root/stash/zs "$ST"/zstandard-*.whl
  UNZ="env PYTHONPATH=/root/stash/zs python3 -c 'import sys,zstandard; zstandard.ZstdDecompressor().copy_stream(sys.stdin.buffer, sys.stdout.buffer)'"
fi
cat $(for i in $(seq 0 $((n-1))); do echo "$ST/stack.part$i"; done) | eval "$UNZ" | tar -x -C /tmp
touch /tmp/site/.installed_real
echo "installed the real stack into /tmp/site + /tmp/sdsite in $(( $(date +%s) - t )) s"
