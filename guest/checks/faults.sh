# Guest checks: the error paths, with slab allocations failed one at a time
# (pc-failnth, /proc/PID/fail-nth, as syzkaller does) on the debug kernel.
# Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

FAILSLAB=/sys/kernel/debug/failslab
# The loops end when an operation no longer reaches its Nth allocation;
# these bound them if it always does.
FAULT_MAX_WRITE=400
FAULT_MAX_LOAD=3000

# Let fail-nth reach GFP_KERNEL allocations, and keep the stack dumps of
# each injected failure off the console (the harness fails a boot on a
# call trace). 0 if the kernel can inject, 1 otherwise.
failslab_setup() {
	[ -w /proc/self/fail-nth ] && [ -d "$FAILSLAB" ] &&
		echo N >"$FAILSLAB/ignore-gfp-wait" && echo 0 >"$FAILSLAB/verbose"
}

# failnth N ARGS...: run pc-failnth; sets FN_RESULT (0 or -errno) and
# FN_INJECTED (0 or 1). Returns 1 if the tool could not run.
failnth() {
	local line
	line=$(pc-failnth "$@") || return 1
	FN_RESULT=${line#result=}
	FN_RESULT=${FN_RESULT%% *}
	FN_INJECTED=${line#*injected=}
	FN_INJECTED=${FN_INJECTED%% *}
}

# Is the driver's state what max_idle says: device present, its
# max_state equal to max_idle? Prints what differs.
max_idle_consistent() {
	local want=$1 got cdev
	got=$(cat "$PARAMS/max_idle")
	cdev=$(cdev_dir)
	[ "$got" = "$want" ] || { echo "max_idle $got, want $want"; return 1; }
	[ -n "$cdev" ] || { echo "no cooling device"; return 1; }
	[ "$(cat "$cdev/max_state")" = "$want" ] ||
		{ echo "max_state $(cat "$cdev/max_state"), want $want"; return 1; }
}

# A failed max_idle write changes nothing: max_idle, max_state and the
# device itself stay (before the fix, the device was gone and the new
# value kept).
fault_max_idle() {
	local n failed=0 bad="" why
	for ((n = 1; n <= FAULT_MAX_WRITE; n++)); do
		failnth "$n" write "$PARAMS/max_idle" 60 || { bad="pc-failnth failed"; break; }
		if [ "$FN_RESULT" = 0 ]; then
			why=$(max_idle_consistent 60) || { bad="n=$n succeeded: $why"; break; }
			echo 50 >"$PARAMS/max_idle"
		else
			failed=$((failed + 1))
			why=$(max_idle_consistent 50) || { bad="n=$n failed ($FN_RESULT): $why"; break; }
		fi
		[ "$FN_INJECTED" = 1 ] || break
	done
	CDEV=$(cdev_dir)
	if [ -n "$bad" ]; then
		fail "max_idle write, allocation $bad"
	elif ((n > FAULT_MAX_WRITE)); then
		fail "max_idle write: still allocating after $FAULT_MAX_WRITE"
	elif ((failed == 0)); then
		fail "max_idle write: no injected failure made it fail ($((n - 1)) allocations)"
	else
		pass "max_idle write: each of $((n - 1)) allocations failed in turn, $failed writes failed, nothing changed"
	fi
}

# After a failed start: no thread, parked ones included, and cur_state 0.
# Prints what differs.
clamp_stopped() {
	list_thread_cpus
	[ -z "$THREAD_CPUS$PARKED_CPUS" ] ||
		{ echo "threads left on CPUs '$THREAD_CPUS', parked on CPUs '$PARKED_CPUS'"; return 1; }
	[ "$(cat "$CDEV/cur_state")" = 0 ] || { echo "cur_state $(cat "$CDEV/cur_state")"; return 1; }
}

# Starting to clamp: the writer's own allocations failed in turn, then the
# creation of an injection thread. The threads are smpboot threads,
# created from the writer's own context through kthreadd: the writer asks,
# kthreadd allocates the new task. kthreadd's first allocation during the
# write is the task_struct of the first thread; failing it must fail the
# write with the error, leave nothing (no thread, cur_state 0) and log
# "cannot start injection threads". kthreadd serves every kthread_create(),
# so a failure that landed elsewhere (a worker created meanwhile; the write
# then succeeds) gets another try, 3 in all.
fault_start() {
	local n try failed=0 bad="" why logged
	for ((n = 1; n <= FAULT_MAX_WRITE; n++)); do
		failnth "$n" write "$CDEV/cur_state" 30 || { bad="pc-failnth failed"; break; }
		if [ "$FN_RESULT" = 0 ]; then
			assert_threads_quiet || { bad="n=$n started without every thread"; break; }
			set_target 0
		else
			failed=$((failed + 1))
			why=$(clamp_stopped) || { bad="n=$n failed ($FN_RESULT): $why"; break; }
		fi
		[ "$FN_INJECTED" = 1 ] || break
	done
	if [ -n "$bad" ]; then
		fail "start, writer's allocation $bad"
	elif ((n > FAULT_MAX_WRITE || failed == 0)); then
		fail "start, writer's allocations: $((n - 1)) failed in turn, $failed writes failed"
	else
		pass "start, the writer's $((n - 1)) allocations failed in turn ($failed writes failed cleanly)"
	fi

	bad=""
	for ((try = 1; try <= 3; try++)); do
		logged=$(thread_failures_logged)
		failnth 1 kthread kthreadd write "$CDEV/cur_state" 30 || { bad="pc-failnth failed"; break; }
		if [ "$FN_RESULT" = 0 ]; then
			bad="kthreadd's first allocation failed (injected $FN_INJECTED), the write succeeded"
			set_target 0
			continue
		fi
		bad=""
		[ "$FN_INJECTED" = 1 ] || bad="the write failed ($FN_RESULT) without kthreadd's allocation failing"
		why=$(clamp_stopped) || bad="${bad:-the write failed ($FN_RESULT)}, $why"
		(($(thread_failures_logged) > logged)) || bad="${bad:-the write failed ($FN_RESULT)}, no log line"
		break
	done
	[ -z "$bad" ] && pass "start, thread not created: $FN_RESULT, nothing left, logged (try $try)" ||
		fail "start, thread not created: $bad"
	set_target 30
	assert_threads_quiet && pass "start works after the failures" ||
		fail "start after the failures: $(clamp_threads | wc -l) threads"
	set_target 0
}

# How many times the driver logged that it could not start the injection
# threads (a failed start; a CPU coming online whose thread cannot be
# created is not logged).
thread_failures_logged() {
	dmesg | grep -cF "$MODULE: cannot start injection threads"
}

# Every online CPU has its thread, not parked (smpboot creates one per
# CPU, whatever the cpumask); quiet, for the loops.
assert_threads_quiet() {
	(($(clamp_threads | wc -l) == $(online_cpus | wc -w)))
}

# A CPU coming online while clamping whose thread cannot be created: the
# online fails with the error and the CPU stays offline (the hotplug core
# rolls it back); it comes online, with its thread, when asked again. The
# CPU is offline when clamping starts, so it has no thread yet: smpboot
# creates it in the first step of the CPU's bring-up (CPUHP_CREATE_THREADS),
# from the task that writes to online, through kthreadd, whose first
# allocation while the CPU comes up is the new thread's task_struct.
# Neither smpboot nor the hotplug core logs the failure, and the driver is
# not called, so there is no log line to look for. kthreadd serves every
# kthread_create(), so a failure that landed elsewhere (a worker created
# meanwhile) gets another try, 3 in all; the CPU then came online with its
# thread, which stays, parked, when it goes offline again, so clamping
# restarts with the CPU offline before the next try.
fault_online() {
	local cpu=$((NCPU - 1)) try online bad=""
	if ((NCPU < 2)); then
		ktap_skip "online while clamping" "one CPU"
		return
	fi
	online=/sys/devices/system/cpu/cpu$cpu/online
	echo 0 >"$online"
	set_target 30
	for ((try = 1; try <= 3; try++)); do
		failnth 1 kthread kthreadd write "$online" 1 || { bad="pc-failnth failed"; break; }
		if [ "$FN_RESULT" = 0 ]; then
			bad="kthreadd's first allocation failed (injected $FN_INJECTED), the CPU came online"
			echo 0 >"$online"
			set_target 0
			set_target 30
			continue
		fi
		bad=""
		[ "$FN_INJECTED" = 1 ] || bad="the write failed ($FN_RESULT) without kthreadd's allocation failing"
		[ "$(cat "$online")" = 0 ] || bad="${bad:-the write failed ($FN_RESULT)}, the CPU is online"
		break
	done
	[ -z "$bad" ] && pass "online while clamping, thread not created: $FN_RESULT, the CPU stayed offline (try $try)" ||
		fail "online while clamping, thread not created: $bad"
	echo 1 >"$online"
	[ "$(cat "$online")" = 1 ] && assert_threads_quiet &&
		pass "online while clamping: CPU $cpu online with its thread after the failure" ||
		fail "online while clamping after the failure: CPU $cpu online $(cat "$online"), $(clamp_threads | wc -l) threads"
	set_target 0
}

# The number of the first slab allocation after the module core's, for
# the module file $1: one more than the most a load refused for a bad
# max_idle makes, over three such loads (lazily filled caches can make
# the first one different). Prints what went wrong and returns 1 if such
# a load did not fail with -EINVAL.
allocations_before_parameters() {
	local try line made most=0
	for try in 1 2 3; do
		line=$(pc-failnth 1000000 load "$1" max_idle=bad) || { echo "could not run"; return 1; }
		[ "${line%% *}" = result=-22 ] || { echo "gave ${line%% *}, not -22"; return 1; }
		made=$((1000000 - ${line##*left=}))
		((made > most)) && most=$made
	done
	echo $((most + 1))
}

# Module load (finit_module): a failed load leaves nothing (module,
# cooling device, debugfs, thread); a load that succeeds despite a failure
# (one the kernel or the driver does without, such as debugfs) has its
# device. The allocations from the parsing of the module's parameters on
# are failed in turn: the module's sysfs and the driver's init. The ones
# before are the module core's, and in this kernel they include what the
# module notifiers do while the module is COMING, before its parameters
# are parsed: the registration of the trace events, where 6.1 (like
# mainline) WARNs on -ENOMEM (event_define_fields(),
# kernel/trace/trace_events.c), a WARN tainting the kernel, and the whole
# KUnit suite (lib/kunit/test.c runs a module's suites at
# MODULE_STATE_COMING). They are not failed. A load with a bad max_idle
# fails in that parsing and so counts them.
fault_load() {
	local ko n first total line failed=0 bad=""
	ko=$(modinfo -n "$MODULE") || { fail "module load: no $MODULE.ko"; return; }
	rmmod "$MODULE" || { fail "module load: cannot unload $MODULE first"; return; }
	first=$(allocations_before_parameters "$ko") ||
		{ fail "module load: a load with max_idle=bad $first"; modprobe "$MODULE"; return; }
	line=$(pc-failnth 1000000 load "$ko") && [ "${line%% *}" = result=0 ] ||
		{ fail "module load: a plain load failed (${line%% *})"; return; }
	rmmod "$MODULE" || { fail "module load: cannot unload after a plain load"; return; }
	total=$((1000000 - ${line##*left=}))
	ktap_diag "a load of $MODULE makes $total slab allocations, $((first - 1)) before its parameters"
	if ((total - first > FAULT_MAX_LOAD)); then
		fail "module load: $((total - first + 1)) allocations, more than $FAULT_MAX_LOAD"
		total=0
	fi
	for ((n = first; n <= total; n++)); do
		failnth "$n" load "$ko" || { bad="pc-failnth failed"; break; }
		if [ "$FN_RESULT" != 0 ]; then
			failed=$((failed + 1))
			[ -d "/sys/module/$MODULE" ] && { bad="$n failed ($FN_RESULT), module left"; break; }
			[ -z "$(cdev_dir)" ] || { bad="$n failed ($FN_RESULT), cooling device left"; break; }
			[ -d "$DEBUG_DIR" ] && { bad="$n failed ($FN_RESULT), debugfs left"; break; }
		else
			[ -n "$(cdev_dir)" ] || { bad="$n loaded without its cooling device"; break; }
			rmmod "$MODULE" || { bad="$n loaded, cannot unload"; break; }
		fi
	done
	if [ -n "$bad" ]; then
		fail "module load, allocation $bad"
	elif ((failed == 0)); then
		fail "module load: no injected failure made a load fail"
	else
		pass "module load: allocations $first..$total failed in turn, $failed loads failed and left nothing"
	fi
	modprobe "$MODULE" && CDEV=$(cdev_dir) && [ -n "$CDEV" ] &&
		pass "module loads after the failures" || fail "module does not load after the failures"
}

check_fault_injection() {
	if ! failslab_setup; then
		if ((PC_DEBUG)); then
			fail "fault injection: no fail-nth or failslab in the debug kernel"
		else
			ktap_skip "fault injection" "not in the kernel without debug options"
		fi
		return
	fi
	fault_max_idle
	fault_start
	fault_online
	fault_load
	echo Y >"$FAILSLAB/ignore-gfp-wait"
}
