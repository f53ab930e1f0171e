# Guest checks: stress. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# writer N COUNT: COUNT random start/stop/retarget writes (a third stop);
# its exit status is the number of failed writes (capped at 255), and it
# leaves that number in /tmp/writer.N, written only when it got to the end.
writer() {
	local i v errors=0
	RANDOM=$(($1 * 7919 + 1))
	for ((i = 0; i < $2; i++)); do
		if ((RANDOM % 3 == 0)); then v=0; else v=$((1 + RANDOM % 50)); fi
		echo "$v" 2>/dev/null >"$CDEV/cur_state" || errors=$((errors + 1))
	done
	echo "$errors" >"/tmp/writer.$1"
	return $((errors > 255 ? 255 : errors))
}

check_stress_writes() {
	local w pids=() errors=0 count finished=0 t0
	rm -f /tmp/writer.*
	start_loads
	t0=$(now_ns)
	for ((w = 0; w < 4; w++)); do
		writer "$w" $((STRESS_WRITES / 4)) &
		pids+=($!)
	done
	# Each writer is waited for on its own, and a writer that died before
	# its end (no count file) is a failure, not a writer with no errors.
	for ((w = 0; w < 4; w++)); do
		wait "${pids[w]}"
		if read -r count 2>/dev/null <"/tmp/writer.$w"; then
			finished=$((finished + 1))
			errors=$((errors + count))
		fi
	done
	expect "stress: writers that finished" "$finished" 4
	ktap_diag "$STRESS_WRITES writes from 4 writers in $((($(now_ns) - t0) / 1000000)) ms under load"
	expect "stress: $STRESS_WRITES concurrent cur_state writes, failed writes" "$errors" 0
	set_target 20
	expect "stress: cur_state reads back after the storm" "$(cat "$CDEV/cur_state")" 20
	assert_threads "$(online_cpus | paste -sd,)" "after the write storm"
	set_target 0
	expect "stress: no thread after the storm and stop" "$(clamp_threads | wc -l)" 0
	stop_loads
}

# hotplug_cycle I: take a random non-boot CPU offline and online again,
# waiting each time for the threads to follow the online CPUs; counts the
# transitions that went wrong in BAD and names the CPU in CYCLED_CPU
hotplug_cycle() {
	CYCLED_CPU=$((1 + RANDOM % (NCPU - 1)))
	cpu_online "$CYCLED_CPU" 0 || BAD=$((BAD + 1))
	threads_follow_online || { BAD=$((BAD + 1)); ktap_diag "cycle $1: cpu$CYCLED_CPU offline"; }
	cpu_online "$CYCLED_CPU" 1 || BAD=$((BAD + 1))
	threads_follow_online || { BAD=$((BAD + 1)); ktap_diag "cycle $1: cpu$CYCLED_CPU online"; }
}

check_stress_hotplug() {
	local i t0
	BAD=0
	set_target 40
	t0=$(now_ns)
	for ((i = 0; i < STRESS_HOTPLUG; i++)); do
		hotplug_cycle "$i"
	done
	ktap_diag "$STRESS_HOTPLUG hotplug cycles at 40 % in $((($(now_ns) - t0) / 1000000)) ms"
	expect "stress: $STRESS_HOTPLUG offline/online cycles, transitions with wrong threads" "$BAD" 0
	expect "stress: cur_state still 40 after hotplug" "$(cat "$CDEV/cur_state")" 40
	set_target 0
	expect "stress: no thread after hotplug stress and stop" "$(clamp_threads | wc -l)" 0
}

# Offline/online cycles of random CPUs at 40 % with 4 ms periods while
# every CPU is kept busy with network softirqs (pc-softirq, pinned to it
# again after each online), with panic_on_warn set. Pending softirqs make
# a thread wait a moment before its period, and that wait is a wakeup in
# which its CPU may start going offline; a thread that then injected off
# its CPU, or on a CPU already gone, would trip play_idle_precise()'s
# warnings, and the guest would panic (the run then misses this check's
# result). The loads must still run at the end, and the driver's count
# of such waits must have grown by 10 a cycle, or the path was not
# exercised.
check_stress_hotplug_softirq() {
	local i cpu pid t0 duration warn deferrals running pids=()
	BAD=0
	duration=$(cat "$PARAMS/duration")
	warn=$(cat /proc/sys/kernel/panic_on_warn)
	echo 4 >"$PARAMS/duration"
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		taskset -c "$cpu" pc-softirq >/dev/null &
		pids+=($!)
	done
	echo 1 >/proc/sys/kernel/panic_on_warn
	set_target 40
	sleep 1
	deferrals=$(stat_field softirq_deferrals)
	t0=$(now_ns)
	for ((i = 0; i < STRESS_HOTPLUG_SOFTIRQ; i++)); do
		hotplug_cycle "$i"
		taskset -pc "$CYCLED_CPU" "${pids[CYCLED_CPU]}" >/dev/null 2>&1
	done
	deferrals=$(($(stat_field softirq_deferrals) - deferrals))
	ktap_diag "$STRESS_HOTPLUG_SOFTIRQ hotplug cycles at 40 % under softirq load in $((($(now_ns) - t0) / 1000000)) ms, $deferrals periods waited for softirqs"
	echo "$warn" >/proc/sys/kernel/panic_on_warn
	set_target 0
	running=0
	for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	echo "$duration" >"$PARAMS/duration"
	expect "stress under softirq load: softirq loads still running at the end" "$running" "$NCPU"
	expect "stress under softirq load: $STRESS_HOTPLUG_SOFTIRQ offline/online cycles, transitions with wrong threads" "$BAD" 0
	# 7800 in 50 cycles with the loads, 85 without them: 10 a cycle
	# tells the two apart
	((deferrals >= 10 * STRESS_HOTPLUG_SOFTIRQ)) &&
		pass "stress under softirq load: $deferrals periods waited for pending softirqs (at least $((10 * STRESS_HOTPLUG_SOFTIRQ)))" ||
		fail "stress under softirq load: $deferrals periods waited for pending softirqs, want at least $((10 * STRESS_HOTPLUG_SOFTIRQ))"
}

check_stress_unload() {
	local i bad=0 t0
	t0=$(now_ns)
	for ((i = 0; i < STRESS_UNLOADS; i++)); do
		set_target $((10 + i % 40)) || bad=$((bad + 1))
		((i % 2)) && sleep 0.1
		rmmod "$MODULE" || bad=$((bad + 1))
		list_thread_cpus
		[ -z "$THREAD_CPUS" ] || { bad=$((bad + 1)); ktap_diag "cycle $i: threads after rmmod"; }
		modprobe "$MODULE" || { bad=$((bad + 1)); break; }
		CDEV=$(cdev_dir)
	done
	ktap_diag "$STRESS_UNLOADS rmmod/modprobe cycles while clamping in $((($(now_ns) - t0) / 1000000)) ms"
	expect "stress: $STRESS_UNLOADS unloads while clamping, failures" "$bad" 0
	expect "stress: device back at target 0" "$(cat "$CDEV/cur_state")" 0
}

# Mixed load at 49 %: CPU spinners, synchronous disk writes and short
# sleeps (timer wakeups). Stalls, hung tasks and soft lockups would show
# on the console, which the host scans.
check_soak() {
	local i0 w0 i1 w1
	start_loads
	(while :; do dd if=/dev/zero of=/var/tmp/soak bs=64k count=16 conv=fsync status=none; done) &
	LOADS+=($!)
	(while :; do sleep 0.01; done) &
	LOADS+=($!)
	set_target 49
	sleep 2
	i0=$(stat_field injections)
	w0=$(stat_field windows)
	sleep "$SOAK_S"
	i1=$(stat_field injections)
	w1=$(stat_field windows)
	ktap_diag "soak: ${SOAK_S}s at 49 %: $((i1 - i0)) injections, $((w1 - w0)) windows; $(grep -E '^(measured_ratio|idle_lost_to_irq_ms|softirq_deferrals):' "$DEBUG_DIR/stats" | paste -sd' ')"
	((i1 > i0 && w1 > w0)) && pass "soak: still injecting after ${SOAK_S}s of mixed load" ||
		fail "soak: injections $i0 -> $i1, windows $w0 -> $w1"
	assert_threads "$(online_cpus | paste -sd,)" "after the soak"
	set_target 0
	stop_loads
	rm -f /var/tmp/soak
}

