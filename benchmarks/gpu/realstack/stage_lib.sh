# Sourced by build_real_stage.sh and build_newer_stage.sh (CPU machine): the pip options that fetch wheels for the
# device's CPython 3.12 on x86_64 from here, and the packing of a staged tree into parts that one device call carries.
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specdraft-device}
P="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp"
for t in 2_39 2_35 2_34 2_31 2_28 2_27 2_26 2_24 2_17 2014 1 2_5; do
  case $t in 2014|1) P="$P --platform manylinux${t}_x86_64";; *) P="$P --platform manylinux_${t}_x86_64";; esac
done

# pack_parts OUT PART_MIB STAGE DIR...: one zstd stream of STAGE/DIR..., split into OUT/pN/stack.partI of PART_MIB
# (each under one call's 64 MiB carry limit together with the ~11 MiB repo), OUT/parts.count and OUT/parts.sha256
# (copied into p1), and the zstandard wheel in the last part. xz -8 of ~900 MB took far too long on a shared 2-core
# machine; zstd -6 is ~10x faster for ~10% more bytes. The device unpacks with its own zstd if it has one, else with
# that module (install_parts.sh).
pack_parts() {
  local out=$1 part=$2 stage=$3; shift 3
  rm -rf "$out"/p* "$out/split"; mkdir -p "$out/split"
  tar -C "$stage" -cf - "$@" | zstd -q -"${ZLEVEL:-6}" -T0 > "$out/stack.tar.zst"
  split -b "${part}M" -d -a 2 "$out/stack.tar.zst" "$out/split/part"
  local i=1 f
  for f in "$out"/split/part*; do mkdir -p "$out/p$i"; mv "$f" "$out/p$i/stack.part$((i-1))"; i=$((i+1)); done
  rmdir "$out/split"
  local n=$((i-1)); echo "$n" > "$out/parts.count"
  (cd "$out" && sha256sum stack.tar.zst > parts.sha256 && rm stack.tar.zst)
  cp "$out/parts.count" "$out/parts.sha256" "$out/p1/"
  # shellcheck disable=SC2086
  ls "$CACHE"/zstandard-*.whl >/dev/null 2>&1 || python3 -m pip download -q $P -d "$CACHE" zstandard==0.25.0
  cp "$CACHE"/zstandard-*.whl "$out/p$n/"  # the last, smallest part: p1 is full
}
