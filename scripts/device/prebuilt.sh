# scripts/device/prebuilt.sh — sourced by the device scripts that run binaries built on the Debian machine (OUT in $1):
# unpacks the carried .devbin/*.gz (stripped, gzipped) into /tmp/bin, sets T0 (the start) and sources common.sh
# (step, status, gpu_tag, the GPU's state; /tmp/bin first on PATH).
set -uo pipefail
mkdir -p /tmp/bin
for f in .devbin/*.gz; do gunzip -c "$f" > "/tmp/bin/$(basename "$f" .gz)"; chmod +x "/tmp/bin/$(basename "$f" .gz)"; done
T0=$(date +%s)
source scripts/device/common.sh /tmp/bin "$1"
