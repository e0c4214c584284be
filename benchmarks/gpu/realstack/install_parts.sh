#!/usr/bin/env bash
# On the GPU machine: collect the parts build_real_stage.sh or build_newer_stage.sh made (one or more per call,
# carried as .device-gpu/<stack>/pN) into /root/stash/parts, and once all are there and the sha256 matches, unpack
# them to /tmp/site (vLLM + the GPU kernel packages) and, for 0.26.0, /tmp/sdsite (the HTTP server's wheels). A stack
# that carries its own torch gets the image's CUDA libraries linked in beside it (the ones it does not carry).
# Idempotent while the machine stays warm. Usage: install_parts.sh PART_DIR...   Exit 0 when installed,
# 4 while parts are missing.
set -euo pipefail
ST=/root/stash/parts; mkdir -p "$ST"
for d in "$@"; do
  [ -d "$d" ] || continue
  # A p1 of another build (another stack, or a rebuild) makes the parts stashed so far stale.
  if [ -f "$d/parts.sha256" ] && ! cmp -s "$d/parts.sha256" "$ST/parts.sha256"; then rm -f "$ST"/stack.part*; fi
  for f in "$d"/*; do [ -f "$f" ] && cp "$f" "$ST/"; done
done
[ -f "$ST/parts.count" ] || { echo "NEED p1 (parts.count)"; exit 4; }
want=$(cut -d' ' -f1 "$ST/parts.sha256")
[ "$(cat /tmp/site/.installed_real 2>/dev/null)" = "$want" ] && { echo "real stack already installed in /tmp/site"; exit 0; }
n=$(cat "$ST/parts.count"); missing=""
for i in $(seq 0 $((n-1))); do [ -f "$ST/stack.part$i" ] || missing="$missing p$((i+1))"; done
[ -z "$missing" ] || { echo "NEED$missing"; exit 4; }
t=$(date +%s)
got=$(cat $(for i in $(seq 0 $((n-1))); do echo "$ST/stack.part$i"; done) | sha256sum | cut -d' ' -f1)
[ "$want" = "$got" ] || { echo "SHA MISMATCH: $got != $want"; exit 5; }
rm -rf /tmp/site /tmp/sdsite
if command -v zstd >/dev/null; then UNZ="zstd -d -q -c"
else
  [ -d /root/stash/zs/zstandard ] || python3 -m pip install -q --no-index --no-deps --target /root/stash/zs "$ST"/zstandard-*.whl
  UNZ="env PYTHONPATH=/root/stash/zs python3 -c 'import sys,zstandard; zstandard.ZstdDecompressor().copy_stream(sys.stdin.buffer, sys.stdout.buffer)'"
fi
cat $(for i in $(seq 0 $((n-1))); do echo "$ST/stack.part$i"; done) | eval "$UNZ" | tar -x -C /tmp
if [ -d /tmp/site/torch ]; then
  # The RPATH of the carried torch looks in /tmp/site/nvidia/{cu13,cudnn,nccl,...}/lib: link there what the image's
  # own torch uses, for every folder or file the stack does not carry itself.
  env -u PYTHONPATH python3 - /tmp/site/nvidia <<'PY'
import os, sys
import nvidia  # the image's namespace package (PYTHONPATH unset)
def link_missing(src, dst, depth):
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if not os.path.lexists(d):
            os.symlink(s, d)
        elif depth and os.path.isdir(s) and os.path.isdir(d) and not os.path.islink(d):
            link_missing(s, d, depth - 1)
for root in nvidia.__path__:
    link_missing(root, sys.argv[1], 2)
print("linked the image's CUDA libraries from", list(nvidia.__path__))
PY
fi
echo "$want" > /tmp/site/.installed_real
echo "installed the real stack into /tmp/site + /tmp/sdsite in $(( $(date +%s) - t )) s"
