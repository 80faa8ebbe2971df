#!/usr/bin/env bash
# scripts/device/session20_b.sh OUT — session 20, after session20_a.sh: the same checks with the L2 prefetch of the
# weight before the wait (hooked_collectives.cuh) added to the swap-AB configs' extension points.
# The steps are session20_a.sh's (the GEMM core's GPU tests; in a, PublishedTilesAreCompleteWhenTheFlagIsSeen hung:
# 512 swap-AB tiles, 1024 consumer operations queued before the GEMM, blocked the host's enqueue; now 256 tiles).
TAG="${TAG:-s20b}" exec ./scripts/device/session20_a.sh "$1"
