#!/usr/bin/env bash
# Build and boot the patched kernel, then show the driver at work: a busy
# guest clamped at 25 %, with the idle /proc/stat shows, the work the loads
# lost and what the driver measured.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

set_up_kernel
# 2 vCPUs on this 2-core host: with more, busy vCPUs lose ticks while the
# host deschedules them and /proc/stat undercounts busy time (README).
"$REPO_DIR/run-qemu.sh" --mode demo --smp "${POWERCLAMP_SMP:-2}" \
	--log "$LOG_DIR/console-demo.log"
