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
	expect "no thread left after hotplug and stop" "$(clamp_threads | wc -l)" 0
}

