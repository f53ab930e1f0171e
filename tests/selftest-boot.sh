#!/usr/bin/env bash
# Proves the boot verdict of scripts/verdict.sh against a stand-in QEMU
# (tests/boot/fake-run-qemu.sh): a first boot that stalled in a named way is
# retried and its splat still counts; a first boot that crashed is not
# retried (a clean second boot would have hidden it); a clean boot is green.
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
. "$TESTS_DIR/../scripts/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
LOG_DIR=$work/out
BOOTS=$work/boots
mkdir -p "$LOG_DIR"
printf 'boot fake kernel=test smp=1 cpu=qemu64 timeout=10\n\tdevice\n' >"$BOOTS"
# shellcheck source=scripts/verdict.sh
. "$REPO_DIR/scripts/verdict.sh"
RUN_QEMU=$TESTS_DIR/boot/fake-run-qemu.sh
export FAKE_COUNT=$work/count FAKE_SCENARIO

# scenario NAME: run the boot; sets BOOTS_RUN, RETRIES, and the counters
scenario() {
	FAKE_SCENARIO=$1
	rm -f "$FAKE_COUNT"
	passed=0 failed=0 skipped=0 retries=()
	run_boot fake >"$work/$1.out" 2>&1
	BOOTS_RUN=$(cat "$FAKE_COUNT")
}

ktap_begin 3
scenario stall-splat
if ((BOOTS_RUN == 2 && ${#retries[@]} == 1 && failed >= 1)) &&
	grep -q 'kernel splat on the guest console (console-fake.log.first' "$work/stall-splat.out"; then
	ktap_ok "boot: a named stall is booted again, and the first console's splat fails the run ($failed failed)"
else
	ktap_not_ok "boot: named stall" "$BOOTS_RUN boots, ${#retries[@]} retries, $failed failed"
	sed 's/^/# /' "$work/stall-splat.out"
fi
scenario crash
if ((BOOTS_RUN == 1 && ${#retries[@]} == 0 && failed >= 1)); then
	ktap_ok "boot: a crashed first boot is not retried and fails the run ($failed failed)"
else
	ktap_not_ok "boot: crashed first boot" "$BOOTS_RUN boots, ${#retries[@]} retries, $failed failed"
	sed 's/^/# /' "$work/crash.out"
fi
scenario clean
if ((BOOTS_RUN == 1 && failed == 0 && passed >= 2)); then
	ktap_ok "boot: a clean boot is green ($passed passed)"
else
	ktap_not_ok "boot: clean boot" "$BOOTS_RUN boots, $passed passed, $failed failed"
	sed 's/^/# /' "$work/clean.out"
fi
ktap_end
((KTAP_FAILED == 0))
