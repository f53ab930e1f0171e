#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install what is
# missing, lint the series, apply it, build the kernel and the rootfs, boot
# the guest checks under QEMU and scan its console. Ends with the line
# "N passed, N failed" and exits non-zero on any failure or kernel splat.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

passed=0
failed=0
current="start"

summary() {
	echo
	echo "==> summary after $(($(date +%s) - PC_START_EPOCH))s"
	echo "$passed passed, $failed failed"
}

# A stage that stops the run (patch does not apply, build breaks) counts as
# one failure, so the closing line is always there.
on_exit() {
	local rc=$?
	if [ "$current" != "done" ]; then
		echo "not ok - stage '$current' failed (exit $rc)"
		failed=$((failed + 1))
		summary
		exit 1
	fi
}
trap on_exit EXIT

# count_from LOG PREFIX: add the "PREFIX: N passed, N failed" line of LOG
count_from() {
	local line
	line=$(grep -aE "^$2: [0-9]+ passed, [0-9]+ failed" "$1" | tail -n 1) || true
	if [ -z "$line" ]; then
		echo "not ok - $2 printed no result line"
		failed=$((failed + 1))
		return
	fi
	read -r _ p _ f _ <<<"$line"
	passed=$((passed + p))
	failed=$((failed + f))
}

mkdir -p "$LOG_DIR"
current="deps"
"$REPO_DIR/scripts/install-deps.sh"
current="tree"
"$REPO_DIR/scripts/prepare-tree.sh"

current="lint"
"$REPO_DIR/scripts/lint.sh" | tee "$LOG_DIR/lint.log" || true
count_from "$LOG_DIR/lint.log" lint

current="kernel build"
"$REPO_DIR/scripts/build-kernel.sh"

# count_tap LOG: add the "ok - " and "not ok - " lines of LOG
count_tap() {
	passed=$((passed + $(grep -c '^ok - ' "$1" || true)))
	failed=$((failed + $(grep -c '^not ok - ' "$1" || true)))
}

current="driver analysis"
"$REPO_DIR/scripts/analyze-driver.sh" | tee "$LOG_DIR/analyze.log" || true
count_tap "$LOG_DIR/analyze.log"

# Series-level checks that need the built config: each patch builds on its
# own, and the exported mails apply with git am. Bisecting re-applies the
# series, so the kernel is brought up to date again afterwards (seconds).
current="bisect"
if "$REPO_DIR/scripts/bisect-build.sh"; then
	passed=$((passed + 1)); echo "ok - every patch of the series builds on its own"
else
	failed=$((failed + 1)); echo "not ok - the series is not bisectable"
fi
current="export"
if "$REPO_DIR/scripts/export-series.sh"; then
	passed=$((passed + 1)); echo "ok - exported series applies with git am to a pristine tree"
else
	failed=$((failed + 1)); echo "not ok - exported series does not apply with git am"
fi
current="kernel build"
"$REPO_DIR/scripts/build-kernel.sh"
current="rootfs"
"$REPO_DIR/scripts/build-rootfs.sh"
# The accuracy checks run on the same series built without debug.config:
# KASAN and lockdep multiply the injecting threads' own cost per period
# under TCG (3-4 points of lost work instead of 1-2), which is the debug
# kernel's price, not the driver's.
current="kernel build (no debug options)"
PC_KERNEL=bench "$REPO_DIR/scripts/build-kernel.sh"
PC_KERNEL=bench "$REPO_DIR/scripts/build-rootfs.sh"

# Two boots: the functional and stress checks on 4 vCPUs (so that several
# CPUs synchronise and hotplug has room), and the accuracy checks on 2
# vCPUs. This host has 2 cores: with 4 busy vCPUs on them a vCPU misses
# ticks whenever it is descheduled, and /proc/stat's busy columns fall
# short of wall time whatever the driver does.
FUNCTIONAL=kunit,start_stop,sync,trace_events,skip_when_idle,params,cpumask,max_idle,hostile_cur_state,unprivileged,controller,hotplug,freeze,unload,stress_writes,stress_hotplug,stress_unload,soak,kmemleak
guest_run() {
	local name=$1 smp=$2 checks=$3 console=$LOG_DIR/console-$1.log verdict=0
	current="guest ($name)"
	boot() {
		"$REPO_DIR/run-qemu.sh" --mode test --smp "$smp" --append "pc.checks=$checks" \
			--log "$console" "${@:4}"
	}
	boot "$@" || verdict=$?
	# A boot that never reached the checks (an early-boot stall of the
	# emulated machine, like the ACPI one that run-qemu.sh's q35 avoids) is
	# booted once more. The driver is loaded only by the checks, so no
	# splat of ours can hide in such a boot; its console is kept as .first.
	if ! grep -q '^TAP version' "$console"; then
		echo "# $name: the guest never reached its checks; booting once more"
		mv "$console" "$console.first"
		verdict=0
		boot "$@" || verdict=$?
	fi
	count_from "$console" guest
	if "$REPO_DIR/scripts/scan-console.sh" "$console" >/dev/null; then
		passed=$((passed + 1))
		echo "ok - $name: guest console free of kernel splats"
	else
		failed=$((failed + 1))
		echo "not ok - $name: kernel splat on the guest console (see above)"
	fi
	if ((verdict == 2)); then
		failed=$((failed + 1))
		echo "not ok - $name: guest crashed, hung or never reported"
	fi
}
guest_run functional 4 "$FUNCTIONAL" --timeout 2700  # the stress counts take ~10 min
PC_KERNEL=bench guest_run accuracy 2 accuracy
# CPUs the driver must refuse: not Intel, and Intel without ARAT.
guest_run amd-cpu 1 probe_refused --cpu EPYC
guest_run no-arat 1 probe_refused --cpu "Skylake-Client,+monitor,-arat"

current="done"
summary
((failed == 0))
