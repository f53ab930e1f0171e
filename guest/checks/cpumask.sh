# Guest checks: the cpumask parameter. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# Clamp CPUs 0 and 2 only: every online CPU has a thread (smpboot creates
# one per CPU, whatever the cpumask), but only those of 0 and 2 run, judged
# by the times each was scheduled (woken_thread_cpus); CPUs 0 and 2 lose
# time, the others keep their throughput. Hotplug and the controller stay
# within the set: CPU 0 offline parks its thread, and only the thread of
# CPU 2 runs until CPU 0 is back.
check_cpumask() {
	local all=0-$((NCPU - 1)) last=$((NCPU - 1)) v base shares cpu lost idle windows skipped
	expect "cpumask default: every CPU" "$(cat "$PARAMS/cpumask")" "$all"
	for v in "" abc 0- 3-1 0x3 0-1,x 1-2:0/1 -1 9999; do
		write_rejected "cpumask <- '$v'" "$PARAMS/cpumask" "$v"
	done
	cpu_online "$last" 0
	write_rejected "cpumask <- offline-only CPU $last" "$PARAMS/cpumask" "$last"
	cpu_online "$last" 1
	dmesg | grep -q "cpumask: no online CPU in '$last'" &&
		pass "offline-only cpumask logs why" || fail "no log line for an offline-only cpumask"
	echo 0,2 >"$PARAMS/cpumask"
	expect "cpumask accepts 0,2" "$(cat "$PARAMS/cpumask")" "0,2"

	start_loads
	sleep 1
	read -r -a base < <(load_shares 3)
	set_target 40
	sleep 2
	list_thread_cpus
	list_online_cpus
	expect "cpumask 0,2: a thread on every online CPU" "$THREAD_CPUS" "$ONLINE_CPUS"
	woken_thread_cpus 1
	expect "cpumask 0,2: threads run only on CPUs 0 and 2" "$WOKEN_CPUS" "0 2"
	write_rejected "cpumask while clamping" "$PARAMS/cpumask" "$all" "Device or resource busy"
	windows=$(stat_field windows) skipped=$(stat_field windows_skipped)
	read -r -a shares < <(load_shares 5)
	windows=$(($(stat_field windows) - windows))
	skipped=$(($(stat_field windows_skipped) - skipped))
	ktap_diag "loads' share of wall time, then each CPU's idle: unclamped ${base[*]}; clamping 0,2 at 40 %: ${shares[*]}; $skipped of $windows windows skipped"
	# 4 vCPUs share 2 host cores here: a load's share of wall time moves by
	# a few points between windows (4.1 seen once), so the bands are wide;
	# clamped (40) and unclamped (0) stay far apart.
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		lost=$(awk -v a="${base[cpu]}" -v b="${shares[cpu]}" 'BEGIN { printf "%.1f", a - b }')
		idle=${shares[NCPU + cpu]}
		case $cpu in
		0 | 2)
			within "cpumask 0,2: cpu$cpu idle shown (%)" "$idle" 40 10
			within "cpumask 0,2: cpu$cpu load loses the target (points)" "$lost" 40 10
			;;
		*)
			within "cpumask 0,2: cpu$cpu idle shown (%)" "$idle" 0 10
			within "cpumask 0,2: cpu$cpu load keeps its throughput (points lost)" "$lost" 0 10
			;;
		esac
	done
	cpu_online 0 0
	sleep 1
	expect "cpumask 0,2: controlling cpu moves to cpu2, not cpu1" "$(stat_field controlling_cpu)" 2
	list_thread_cpus
	list_online_cpus
	expect "cpumask 0,2: cpu0 offline parks its thread" "$PARKED_CPUS" 0
	expect "cpumask 0,2: cpu0 offline, threads not parked on the online CPUs" "$THREAD_CPUS" "$ONLINE_CPUS"
	woken_thread_cpus 1
	expect "cpumask 0,2: cpu0 offline leaves only the thread on 2 running" "$WOKEN_CPUS" 2
	cpu_online 0 1
	sleep 1
	list_thread_cpus
	list_online_cpus
	expect "cpumask 0,2: cpu0 back online, a thread on every online CPU" "$THREAD_CPUS" "$ONLINE_CPUS"
	woken_thread_cpus 1
	expect "cpumask 0,2: cpu0 back online, threads run on CPUs 0 and 2" "$WOKEN_CPUS" "0 2"
	set_target 0
	stop_loads
	echo "$all" >"$PARAMS/cpumask"
	expect "cpumask back to every CPU" "$(cat "$PARAMS/cpumask")" "$all"
}

# max_idle is max_state; a new value registers the cooling device again.

# Isolated CPUs, in a boot with isolcpus=1: by
# default the driver leaves CPU 1 alone and says so (CPU 1 has a thread
# while clamping, as every online CPU has, but it never runs); a cpumask
# that names it is honoured, and logged.
check_isolated_cpus() {
	local alone=0 named=0
	expect "isolated CPUs (isolcpus= on the command line)" "$(cat /sys/devices/system/cpu/isolated)" 1
	# (the reset before every check has already loaded the module and
	# named every CPU: count the log lines from here on)
	alone=$(dmesg | grep -c 'isolated CPUs 1 left alone')
	rmmod "$MODULE" && modprobe "$MODULE" || { fail "isolated_cpus: module reload failed"; return; }
	CDEV=$(cdev_dir)
	expect "cooling device back after the reload" "$(cat "$CDEV/type")" "$MODULE"
	expect "default cpumask: the housekeeping CPUs" "$(cat "$PARAMS/cpumask")" 0
	expect "log lines naming isolated CPU 1 left alone, after a reload" \
		"$(dmesg | grep -c 'isolated CPUs 1 left alone')" "$((alone + 1))"
	start_loads
	set_target 25
	sleep 1
	list_thread_cpus
	list_online_cpus
	expect "default cpumask at 25 %: a thread on every online CPU" "$THREAD_CPUS" "$ONLINE_CPUS"
	woken_thread_cpus 1
	expect "default cpumask at 25 %: threads run only on CPU 0" "$WOKEN_CPUS" 0
	set_target 0
	named=$(dmesg | grep -c 'isolated CPUs 1 clamped as the cpumask parameter asks')
	echo 0-1 >"$PARAMS/cpumask"
	expect "cpumask 0-1 accepted" "$(cat "$PARAMS/cpumask")" 0-1
	expect "log lines for cpumask naming isolated CPU 1, after naming it" \
		"$(dmesg | grep -c 'isolated CPUs 1 clamped as the cpumask parameter asks')" "$((named + 1))"
	set_target 25
	sleep 1
	list_thread_cpus
	list_online_cpus
	expect "cpumask 0-1 at 25 %: a thread on every online CPU" "$THREAD_CPUS" "$ONLINE_CPUS"
	woken_thread_cpus 1
	expect "cpumask 0-1 at 25 %: threads run on CPUs 0 and 1" "$WOKEN_CPUS" "0 1"
	set_target 0
	stop_loads
}
