#!/usr/bin/env bash
# Build and boot the patched kernel, then show the driver at work: a busy
# guest clamped at 25 %, with the idle /proc/stat shows, the work the loads
# lost and what the driver measured.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

"$REPO_DIR/scripts/preflight.sh"
take_lock
"$REPO_DIR/scripts/install-deps.sh"
"$REPO_DIR/scripts/prepare-tree.sh"
"$REPO_DIR/scripts/build-kernel.sh"
"$REPO_DIR/scripts/build-rootfs.sh"
# 2 vCPUs on this 2-core host: with more, busy vCPUs lose ticks while the
# host deschedules them and /proc/stat undercounts busy time (README).
"$REPO_DIR/run-qemu.sh" --mode demo --smp "${POWERCLAMP_SMP:-2}" \
	--log "$LOG_DIR/console-demo.log"
