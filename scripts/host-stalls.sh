#!/usr/bin/env bash
# A noisy host on demand: stops the newest QEMU on this machine for STOP
# seconds every EVERY seconds, for TOTAL seconds. Guest time runs on while
# QEMU is stopped, as it does when the machine under it is itself held up
# (a cold CI machine overran the guests' forced idle periods to 130 % of
# the plan): timers fire late, forced idle periods overrun, busy CPUs
# lose ticks. Run it beside scripts/check.sh to see how a check and the
# driver fare there.
#
# usage: scripts/host-stalls.sh [STOP [EVERY [TOTAL]]]   (0.15 0.5 300)
#   e.g. scripts/host-stalls.sh & scripts/check.sh trace_events; kill %1
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse ARGS -- "$@" <<'EOF'
usage: scripts/host-stalls.sh [STOP [EVERY [TOTAL]]]   (default: 0.15 0.5 300)
  e.g. scripts/host-stalls.sh & ./check.sh trace_events; kill %1

A noisy host on demand: stops the newest QEMU on this machine (SIGSTOP)
for STOP seconds, lets it run for EVERY seconds, and so on for TOTAL
seconds; QEMU is never left stopped. Guest time runs on while QEMU is
stopped, as when the machine under it is itself held up: timers fire
late, forced idle periods overrun, busy CPUs lose ticks. Run it beside a
check to see how the check and the driver fare there.
EOF
STOP=${1:-0.15}
EVERY=${2:-0.5}
TOTAL=${3:-300}
end=$((SECONDS + TOTAL))
pid=""
# never leave QEMU stopped
trap '[ -z "$pid" ] || kill -CONT "$pid" 2>/dev/null || true' EXIT
while ((SECONDS < end)); do
	pid=$(pgrep -n -f '^[^ ]*qemu-system-x86_64 ' || true)
	if [ -n "$pid" ]; then
		kill -STOP "$pid" 2>/dev/null || true
		sleep "$STOP"
		kill -CONT "$pid" 2>/dev/null || true
	fi
	sleep "$EVERY"
done
