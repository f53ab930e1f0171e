#!/usr/bin/env bash
# Build and boot the patched kernel, then show the driver at work: a busy
# guest clamped at 25 %, with the idle /proc/stat shows, the work the loads
# lost and what the driver measured.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/demo.sh

Builds and boots the patched kernel, then shows the driver at work in the
guest: a busy guest unclamped and then clamped at 25 %, the idle
/proc/stat shows, the share of the CPUs the loads got, the kidle_inject
threads and the driver's statistics. From a fresh Debian 12 machine, as
root: installs what it needs with apt, fills the cache
(/var/tmp/powerclamp-cache) and takes its lock. Takes no arguments.

Environment: POWERCLAMP_SMP (vCPUs, default 2), POWERCLAMP_CACHE,
POWERCLAMP_LOGS (instead of out/; the console goes to console-demo.log).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

set_up_kernel
# 2 vCPUs on this 2-core host: with more, busy vCPUs lose ticks while the
# host deschedules them and /proc/stat undercounts busy time (README).
"$REPO_DIR/run-qemu.sh" --mode demo --smp "${POWERCLAMP_SMP:-2}" \
	--log "$LOG_DIR/console-demo.log"
