# scripts/device/prebuilt.sh — sourced by the device scripts that run binaries built on the Debian machine (OUT in $1):
# unpacks the carried .devbin (stripped binaries, each gzipped (*.gz), or all in one xz tarball (*.tar.xz, made by
# pack_prebuilt.sh)) into /tmp/bin, sets T0 (the start) and sources common.sh (step, status, gpu_tag, the GPU's
# state; /tmp/bin first on PATH).
set -uo pipefail
mkdir -p /tmp/bin
for f in .devbin/*.gz; do
  [ -e "$f" ] || continue
  gunzip -c "$f" > "/tmp/bin/$(basename "$f" .gz)"; chmod +x "/tmp/bin/$(basename "$f" .gz)"
done
for f in .devbin/*.tar.xz; do
  [ -e "$f" ] || continue
  if command -v xz > /dev/null; then tar -xJf "$f" -C /tmp/bin
  else python3 -c "import lzma, sys, tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])" "$f" /tmp/bin
  fi
done
T0=$(date +%s)
source scripts/device/common.sh /tmp/bin "$1"
