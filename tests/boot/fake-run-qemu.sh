#!/usr/bin/env bash
# A stand-in for run-qemu.sh (tests/selftest-boot.sh): writes the console
# and KTAP channel that FAKE_SCENARIO's Nth boot would have, and exits with
# run-qemu.sh's verdict for it. Boots are counted in $FAKE_COUNT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log="" ktap=""
while (($#)); do
	case "$1" in
	--log) log=$2; shift 2 ;;
	--ktap) ktap=$2; shift 2 ;;
	--*) shift 2 ;;
	esac
done
n=$(($(cat "$FAKE_COUNT" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_COUNT"
rm -f "$ktap"

passing_boot() {
	echo "[    0.000000] Linux version 6.1.0-powerclamp" >"$log"
	printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: device\n    ok 1 modprobe intel_powerclamp\nok 1 device\n' >"$ktap"
	exit 0
}

case "$FAKE_SCENARIO:$n" in
# First boot stalls in a way scripts/known-stalls names, after a splat.
stall-splat:1)
	cat "$here/stall-acpi.log" >"$log"
	echo "[   33.100000] WARNING: CPU: 0 PID: 1 at kernel/time/tick-sched.c:1100 tick_irq_exit+0x30/0x90" >>"$log"
	exit 2 ;;
# First boot crashes (no known stall): a retry would come out green.
crash:1)
	cat "$here/crash-first-boot.log" >"$log"
	exit 2 ;;
*) passing_boot ;;
esac
