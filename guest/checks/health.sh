# Guest checks: the state of the kernel at the end of a boot. Sourced by
# run-checks.sh. The registry runs them last in every boot.
# shellcheck shell=bash

# Leaks after everything the boot did. The runner cleared the suspects
# found before the first check, so what is left is the checks' doing.
check_kmemleak() {
	local f=/sys/kernel/debug/kmemleak leaks err
	if [ ! -w "$f" ]; then
		if ((PC_DEBUG)); then
			fail "kmemleak: $f missing on the debug kernel"
		else
			ktap_skip "kmemleak" "not in the kernel without debug options"
		fi
		return
	fi
	[ -d "/sys/module/$MODULE" ] && rmmod "$MODULE"
	# kmemleak that is off (kmemleak=off, or after an error of its own)
	# keeps its file but refuses the scan (EPERM) and lists nothing, so
	# its count of 0 would pass without a scan.
	if ! err=$({ echo scan >"$f" && sleep 6 && echo scan >"$f"; } 2>&1); then
		if ((PC_DEBUG)); then
			fail "kmemleak: scan refused on the debug kernel (${err##*: }): kmemleak is off"
		else
			ktap_skip "kmemleak" "scan refused (${err##*: }) in the kernel without debug options"
		fi
		return
	fi
	leaks=$(grep -c 'unreferenced object' "$f")
	expect "kmemleak: leaks after load/clamp/unload" "$leaks" 0
	[ "$leaks" = 0 ] || head -40 "$f" | sed "s/^/$KTAP_INDENT# /"
}

# preempt_model_asked: what the command line's preempt= asks for, "none"
# without one (the default of these kernels, config-fragments/base.config)
preempt_model_asked() {
	local arg model=none
	for arg in $(</proc/cmdline); do
		case $arg in preempt=*) model=${arg#preempt=} ;; esac
	done
	echo "$model"
}

# preempt_model_running: the model the scheduler runs, the one in
# parentheses of debugfs's sched/preempt ("none voluntary (full)"); empty
# on a kernel without PREEMPT_DYNAMIC, which ignores preempt= silently.
preempt_model_running() {
	local f=/sys/kernel/debug/sched/preempt
	[ -r "$f" ] && sed -n 's/.*(\([a-z]*\)).*/\1/p' "$f"
}

# Taint: only the KUnit test taint (TAINT_TEST, bit 18) may be set, and
# TAINT_CPU_OUT_OF_SPEC (bit 2) in a boot whose checks wrote MSRs through
# the msr device, which sets it at every write (the PC_WROTE_MSRS file,
# package.sh). Lockdep switches itself off at its first report
# (debug_locks 0), and everything after that goes unchecked: it must
# still be on at the end.
TAINT_TEST=$((1 << 18))
TAINT_CPU_OUT_OF_SPEC=$((1 << 2))

check_health() {
	local tainted debug_locks allowed=$TAINT_TEST what="the KUnit test taint"
	if [ -e "${PC_WROTE_MSRS:-/nonexistent}" ]; then
		allowed=$((allowed | TAINT_CPU_OUT_OF_SPEC))
		what+=" and the MSR writes' (CPU out of spec)"
	fi
	expect "preemption model: the one the command line asked for" \
		"$(preempt_model_running)" "$(preempt_model_asked)"
	tainted=$(cat /proc/sys/kernel/tainted)
	expect "tainted, less $what" "$((tainted & ~allowed))" 0
	ktap_diag "tainted: $tainted"
	if [ -r /proc/lockdep_stats ]; then
		debug_locks=$(awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats)
		expect "lockdep still on (debug_locks)" "$debug_locks" 1
	elif ((PC_DEBUG)); then
		fail "lockdep: no /proc/lockdep_stats on the debug kernel"
	else
		ktap_diag "no lockdep in the kernel without debug options"
	fi
}
