# Guest checks: CPU hotplug while clamping. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

check_hotplug() {
	local ctl
	if [ ! -f /sys/devices/system/cpu/cpu1/online ]; then
		fail "cpu1 cannot be hotplugged"
		return
	fi
	set_target 40
	sleep 1
	cpu_online 2 0
	assert_threads "$(online_cpus | paste -sd,)" "cpu2 offline"
	list_thread_cpus
	expect "cpu2 offline parks its thread" "$PARKED_CPUS" 2
	cpu_online 2 1
	sleep 1
	assert_threads "$(online_cpus | paste -sd,)" "cpu2 back online"
	if [ -f /sys/devices/system/cpu/cpu0/online ]; then
		expect "controlling cpu is the first online" "$(stat_field controlling_cpu)" 0
		cpu_online 0 0
		sleep 1
		ctl=$(stat_field controlling_cpu)
		expect "controlling cpu re-elected when cpu0 goes offline" "$ctl" 1
		assert_threads "$(online_cpus | paste -sd,)" "cpu0 offline"
		w0=$(stat_field windows)
		sleep 2
		(($(stat_field windows) > w0)) && pass "new controlling cpu closes windows" ||
			fail "no window closed after re-election"
		cpu_online 0 1
		sleep 1
		assert_threads "$(online_cpus | paste -sd,)" "cpu0 back online"
	else
		fail "cpu0 cannot be hotplugged (CONFIG_BOOTPARAM_HOTPLUG_CPU0)"
	fi
	set_target 0
	list_thread_cpus
	expect "no thread left after hotplug and stop, parked or not" "$THREAD_CPUS$PARKED_CPUS" ""
}


# An offline that the scheduler refuses after it has deactivated the CPU
# (deadline bandwidth that does not fit on the CPUs left: cpuset_cpu_inactive()
# answers EBUSY) is rolled back without running the driver's teardown or
# online callback. A thread that woke in that window was not allowed on its
# dying CPU (a kthread that is not per-CPU) and was moved with its affinity
# widened; if nothing binds it again, it skips every period from then on
# and its CPU is no longer clamped. Sleeping SCHED_DEADLINE tasks of 98 %
# of a CPU each, one fewer than the CPUs (admission control takes them
# against 95 % of every CPU), make every offline fail with EBUSY. During
# 100 of them while clamping with 4 ms periods the scheduler's
# sched_migrate_task trace must never move a kidle_inject/N off CPU N
# (a thread the kernel binds and parks itself is never moved; one that
# binds itself again afterwards was, and for a while ran elsewhere);
# afterwards each thread must still be bound to its CPU (assert_threads)
# and every CPU must go on injecting.
FAILED_OFFLINES=${FAILED_OFFLINES:-100}
# threads_moved_off TRACE: how many sched_migrate_task events in TRACE move
# a kidle_inject/N to a CPU other than N, the first few as diagnostics
threads_moved_off() {
	awk -v comm="$THREAD_COMM" '
		/ sched_migrate_task: / {
			if (!match($0, "comm=" comm "/[0-9]+ ")) next
			n = substr($0, RSTART + length(comm) + 6, RLENGTH - length(comm) - 7)
			if (!match($0, /dest_cpu=[0-9]+/)) next
			if (substr($0, RSTART + 9, RLENGTH - 9) == n) next
			if (++moved <= 3) print "# " $0 >"/dev/stderr"
		}
		END { print moved + 0 }' "$1"
}

check_failed_offline() {
	local cpu=1 i err pid refused=0 taken=0 before t=/sys/kernel/tracing
	local -a dl=()
	before=$(cat "$PARAMS/duration")
	echo 4 >"$PARAMS/duration"
	start_loads # an idle guest would skip its windows
	set_target 25
	sleep 1
	for ((i = 1; i < NCPU; i++)); do
		chrt --deadline --sched-runtime 98000000 --sched-deadline 100000000 \
			--sched-period 100000000 0 sleep 600 &
		dl+=($!)
	done
	sleep 0.5
	for pid in "${dl[@]}"; do
		chrt -p "$pid" 2>/dev/null | grep -q SCHED_DEADLINE ||
			{ fail "failed offline: deadline task $pid not admitted"; kill "${dl[@]}"; return; }
	done
	echo >"$t/trace"
	echo "comm ~ \"$THREAD_COMM/*\"" >"$t/events/sched/sched_migrate_task/filter"
	echo 1 >"$t/events/sched/sched_migrate_task/enable"
	for ((i = 0; i < FAILED_OFFLINES; i++)); do
		if err=$(printf "0\n" 2>&1 >"/sys/devices/system/cpu/cpu$cpu/online"); then
			taken=$((taken + 1))
			cpu_online "$cpu" 1
		elif [ "${err##*: }" = "Device or resource busy" ]; then
			refused=$((refused + 1))
		fi
	done
	echo 0 >"$t/events/sched/sched_migrate_task/enable"
	echo 0 >"$t/events/sched/sched_migrate_task/filter"
	kill "${dl[@]}"
	wait "${dl[@]}" 2>/dev/null || true
	expect "failed offline: offlines of CPU $cpu refused with EBUSY" "$refused/$taken" "$FAILED_OFFLINES/0"
	expect "failed offline: injecting threads moved off their CPU (sched_migrate_task)" \
		"$(threads_moved_off "$t/trace")" 0
	assert_threads "$(online_cpus | paste -sd,)" "after $refused failed offlines"
	echo >"$t/trace"
	echo 1 >"$t/events/powerclamp/powerclamp_injection/enable"
	sleep 1
	echo 0 >"$t/events/powerclamp/powerclamp_injection/enable"
	for cpu in $(online_cpus); do
		i=$(grep -c " powerclamp_injection: cpu=$cpu " "$t/trace")
		((i >= 10)) && pass "failed offline: CPU $cpu injects ($i periods in 1 s)" ||
			fail "failed offline: CPU $cpu injected $i periods in 1 s, want at least 10"
	done
	echo >"$t/trace"
	set_target 0
	stop_loads
	echo "$before" >"$PARAMS/duration"
}
