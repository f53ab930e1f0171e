# Guest checks: refusal to probe on CPUs the driver cannot drive. Sourced by
# run-checks.sh. Each boot has its own check, with the one reason that boot's
# CPU must give: a reason logged for the other CPU would be a wrong probe.
# shellcheck shell=bash

# probe_refused VENDOR ARAT REASON: this boot's CPU is VENDOR with (1) or
# without (0) ARAT, and modprobe must fail logging REASON, leaving nothing.
probe_refused() {
	local vendor arat before reason
	vendor=$(awk -F': ' '/^vendor_id/ { print $2; exit }' /proc/cpuinfo)
	arat=$(grep -m1 -cw arat /proc/cpuinfo)
	expect "CPU vendor of this boot" "$vendor" "$1"
	expect "ARAT flag of this boot's CPU" "$arat" "$2"
	before=$(dmesg | wc -l)
	if modprobe "$MODULE" 2>/dev/null; then
		fail "modprobe succeeded on a $vendor CPU (arat: $arat)"
		return
	fi
	pass "modprobe refused on a $vendor CPU (arat: $arat)"
	reason=$(dmesg | tail -n +"$((before + 1))" | grep -F "$MODULE: " | tail -n 1)
	expect "the one reason logged" "${reason#*] }" "$MODULE: $3"
	expect "no cooling device left" "$(cdev_dir)" ""
	expect "no kidle_inject threads" "$(clamp_threads | wc -l)" 0
	expect "module not loaded" "$([ -d "/sys/module/$MODULE" ] && echo loaded || echo absent)" absent
}

check_probe_refused_vendor() {
	probe_refused AuthenticAMD 1 "needs an Intel family 6 CPU"
}

check_probe_refused_arat() {
	probe_refused GenuineIntel 0 \
		"cannot force idle: the CPU lacks an always running APIC timer (ARAT)"
}
