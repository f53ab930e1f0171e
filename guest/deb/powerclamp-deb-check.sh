#!/bin/bash
# The guest side of the Debian package route (scripts/deb-guest.sh): installed
# in its guest as /usr/local/sbin/powerclamp-deb-check and run once at boot
# by powerclamp-deb-check.service, after thermald.service.
#
# That guest runs the patched kernel as an administrator would install it:
# the linux-image package of scripts/deb-build.sh, installed with apt, booted
# through the initramfs its installation made, under systemd, with Debian's
# thermald.service holding the emulated Intel package (docs/emulator.md) at
# a passive trip through the intel_powerclamp cooling device. Every result
# is on values read here:
#   - the running kernel is the installed package's, booted through its
#     initramfs, with systemd as PID 1;
#   - thermald is active, took the configuration made for this product, and
#     clamps the package through intel_powerclamp once every CPU is busy;
#     the forced idle shows in /proc/stat;
#   - "systemctl suspend" with the clamp on, woken by the RTC alarm that
#     "rtcwake -m no" set: afterwards thermald clamps again and the
#     injection runs; with the load gone thermald lets go.
# It prints one KTAP document on stdout (the console) and on the second
# serial port, /dev/ttyS1, which the host parses (no kernel message lands
# there), then "N passed, N failed", and powers the machine off.
#
# Not set -e: a probe that fails must give its "not ok" line, not end the
# document short of its plan. Not pipefail: a grep -q that stops reading
# early must not turn its match into a failure of the pipe.
set -u

usage() {
	cat <<'EOF'
usage: powerclamp-deb-check [--no-poweroff]

The Debian package route's check (scripts/deb-guest.sh), run at boot by
powerclamp-deb-check.service in that guest only: it loads every CPU,
suspends the machine once (woken by the RTC after 15 s) and powers it
off at the end. Prints a KTAP document on stdout and on /dev/ttyS1, then
"N passed, N failed"; exits 1 on any failure, 2 outside that guest.

  --no-poweroff   leave the machine running at the end
EOF
}

POWEROFF=1
for arg in "$@"; do
	case "$arg" in
	-h | --help) usage; exit 0 ;;
	--no-poweroff) POWEROFF=0 ;;
	*) echo "powerclamp-deb-check: unknown option '$arg' (see --help)" >&2; exit 2 ;;
	esac
done

LIB=/usr/local/lib/powerclamp-deb
# The installed package's release and version, written by deb-guest.sh;
# also the sign that this is that guest
SETTINGS=$LIB/settings
THERMALD_CONF=/etc/thermald/thermal-conf.xml
KTAP_TTY=/dev/ttyS1
STATS=/sys/power/suspend_stats
RTC=/sys/class/rtc/rtc0
if [ ! -r "$SETTINGS" ]; then
	echo "powerclamp-deb-check: no $SETTINGS: not the Debian package route's guest (this check suspends and powers off the machine)" >&2
	exit 2
fi
# shellcheck source=lib/ktap.sh
. "$LIB/ktap.sh"

PLAN=20
NCPU=$(nproc --all)
# Seconds: for the idle package to cool below the trip; for thermald to
# clamp the loaded package (the model crosses a 50 C trip about 4 s after
# the load starts, docs/emulator.md); for the clamp to settle before it is
# measured; the measuring window; the RTC alarm; for the suspend to
# happen and come back; for thermald to clamp again after resume, and to
# let go once the load is gone.
COOL_S=120
CLAMP_S=120
SETTLE_S=10
WINDOW_S=10
WAKE_S=15
RESUME_S=120
RECLAMP_S=60
RELEASE_S=60
# The idle /proc/stat must show while clamped: half the mean target over
# the window, at least this. Fully loaded and unclamped it shows 0-2 %.
IDLE_FLOOR=5
LOADS=()

setting() { sed -n "s/^$1=//p" "$SETTINGS"; }

# conf_value ELEMENT: the first <ELEMENT> of thermald's configuration
conf_value() {
	sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$THERMALD_CONF" 2>/dev/null | head -n 1
}

# of_type PREFIX TYPE: the first folder PREFIX* whose file "type" reads TYPE
of_type() {
	local d t
	for d in "$1"*; do
		read -r t 2>/dev/null <"$d/type" || continue
		[ "$t" = "$2" ] && { echo "$d"; return; }
	done
}

# cur_state: the cooling device's target, -1 when it cannot be read
cur_state() {
	local v
	read -r v 2>/dev/null <"$CDEV/cur_state" && [[ $v =~ ^[0-9]+$ ]] || v=-1
	echo "$v"
}

# temp_c: the package sensor in C, 999 when it cannot be read
temp_c() {
	local v
	read -r v 2>/dev/null <"$ZONE/temp" && [[ $v =~ ^-?[0-9]+$ ]] || v=999000
	awk -v v="$v" 'BEGIN { printf "%.1f\n", v / 1000 }'
}

# wait_until SECONDS COMMAND...: COMMAND once a second until it succeeds,
# for at most SECONDS; WAITED is the seconds it took
wait_until() {
	local limit=$1
	shift
	for ((WAITED = 0; WAITED <= limit; WAITED++)); do
		"$@" && return 0
		sleep 1
	done
	return 1
}

# What wait_until waits for (shellcheck sees no direct call of them)
# shellcheck disable=SC2317
cool_and_free() {
	awk -v t="$(temp_c)" -v trip="$TRIP_C" 'BEGIN { exit !(t <= trip - 3) }' &&
		[ "$(cur_state)" = 0 ]
}
# shellcheck disable=SC2317
clamping() { (($(cur_state) > 0)); }
# shellcheck disable=SC2317
released() { [ "$(cur_state)" = 0 ]; }
# shellcheck disable=SC2317
resumed() { (($(suspend_count) > SUSPENDS_BEFORE)); }
suspend_count() { cat "$STATS/success" 2>/dev/null || echo -1; }

# the kernel's messages since boot, from the ring buffer and the journal
kernel_log() {
	{
		dmesg 2>/dev/null
		journalctl -k -b -o cat --no-pager 2>/dev/null
	}
}

start_loads() {
	local cpu
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		taskset -c "$cpu" bash -c 'while :; do :; done' &
		LOADS+=($!)
	done
}

stop_loads() {
	((${#LOADS[@]})) || return 0
	kill "${LOADS[@]}" 2>/dev/null
	wait "${LOADS[@]}" 2>/dev/null
	LOADS=()
}

# cpu_ticks: /proc/stat's idle (with iowait) and total ticks of all CPUs
cpu_ticks() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print $5 + $6, t; exit }' /proc/stat
}

# clamp_window LABEL: one result on the idle /proc/stat shows over
# WINDOW_S s against the mean of cur_state, read each second, over the same
# s. Patches 1 to 4 account forced idle as idle, and the loads leave no
# idle of their own, so the idle follows the target; half of it is the
# floor, which injection that does not run (or is not accounted) misses.
clamp_window() {
	local label=$1 i0 t0 i1 t1 k states=() idle mean floor threads
	read -r i0 t0 < <(cpu_ticks)
	for ((k = 0; k < WINDOW_S; k++)); do
		sleep 1
		states+=("$(cur_state)")
	done
	read -r i1 t1 < <(cpu_ticks)
	threads=$(grep -l '^kidle_inject/' /proc/[0-9]*/comm 2>/dev/null | wc -l)
	read -r idle mean floor < <(awk -v di="$((i1 - i0))" -v dt="$((t1 - t0))" \
		-v st="${states[*]}" -v min="$IDLE_FLOOR" 'BEGIN {
		n = split(st, a, " ")
		for (i = 1; i <= n; i++) sum += a[i]
		mean = n ? sum / n : 0
		floor = (mean / 2 < min) ? min : mean / 2
		printf "%.1f %.1f %.1f\n", (dt > 0 ? 100 * di / dt : 0), mean, floor }')
	ktap_diag "$label: cur_state each second: ${states[*]}; package $(temp_c) C; $threads kidle_inject threads"
	if awk -v i="$idle" -v m="$mean" -v f="$floor" 'BEGIN { exit !(m > 0 && i >= f) }'; then
		ktap_ok "$label: /proc/stat idle $idle % at a mean target of $mean % over $WINDOW_S s (at least $floor)"
	else
		ktap_not_ok "$label: /proc/stat idle $idle % at a mean target of $mean % over $WINDOW_S s" \
			"want a target above 0 and at least $floor % idle"
	fi
}

# ---- the kernel, its initramfs, systemd ----

check_kernel_package() {
	local release version pkg status installed owner
	release=$(setting release)
	version=$(setting version)
	pkg=linux-image-$release
	read -r status installed < <(dpkg-query -W -f='${db:Status-Abbrev} ${Version}\n' "$pkg" 2>/dev/null)
	owner=$(dpkg -S "/boot/vmlinuz-$(uname -r)" 2>/dev/null | cut -d: -f1)
	if [ "$(uname -r)" = "$release" ] && [ "${status:-}" = ii ] &&
		[ "${installed:-}" = "$version" ] && [ "$owner" = "$pkg" ]; then
		ktap_ok "running kernel $release is that of package $pkg $version, installed (its /boot/vmlinuz)"
	else
		ktap_not_ok "running kernel $(uname -r); $pkg: status '${status:-}', version '${installed:-}'; /boot/vmlinuz-$(uname -r) from '$owner'" \
			"want $release from $pkg $version, installed (ii)"
	fi
	# make bindeb-pkg builds with KBUILD_BUILD_VERSION set to the package
	# revision, the part of the version after its last '-'
	# (a '#' in a description would start a KTAP directive: left out)
	if [[ "$(uname -v)" == "#${version##*-} "* ]]; then
		ktap_ok "the kernel is the package build's: uname -v starts with its revision, ${version##*-}"
	else
		ktap_not_ok "uname -v '$(uname -v | tr -d '#')'" "want the package's revision, ${version##*-}, after its '#'"
	fi
}

check_initramfs() {
	local initrd=/boot/initrd.img-$1 magic kind size log
	magic=$(od -An -tx1 -N4 "$initrd" 2>/dev/null | tr -d ' ')
	case "$magic" in
	28b52ffd) kind=zstd ;;
	1f8b*) kind=gzip ;;
	30373037) kind="cpio first" ;;
	*) kind="" ;;
	esac
	size=$(($(stat -c %s "$initrd" 2>/dev/null || echo 0) / 1024))
	if [ -n "$kind" ] && ((size > 0)) && ! dpkg -S "$initrd" >/dev/null 2>&1; then
		ktap_ok "the package's installation made $initrd ($size KiB, $kind; no package ships it)"
	else
		ktap_not_ok "$initrd: $size KiB, starts with '$magic'" "want the initramfs update-initramfs makes (zstd or gzip)"
	fi
	log=$(kernel_log)
	# "Unpacking initramfs..." without CONFIG_BLK_DEV_RAM, "Trying to
	# unpack rootfs image as initramfs..." with it; the kernel then runs
	# the initramfs's /init, not the root's /sbin/init
	if grep -Eq 'Unpacking initramfs|Trying to unpack rootfs image as initramfs' <<<"$log" &&
		! grep -q 'Initramfs unpacking failed' <<<"$log" &&
		grep -q 'Run /init as init process' <<<"$log" && [ -d /run/initramfs ]; then
		ktap_ok "root ($(findmnt -no SOURCE,FSTYPE /)) mounted through the initramfs: the kernel unpacked it and ran its /init, initramfs-tools' /run/initramfs came over"
	else
		ktap_not_ok "root mounted through the initramfs" \
			"unpacked: $(grep -Ec 'Unpacking initramfs|Trying to unpack rootfs image as initramfs' <<<"$log"), failed: $(grep -m1 'Initramfs unpacking failed' <<<"$log"), ran /init: $(grep -c 'Run /init as init process' <<<"$log"), /run/initramfs: $([ -d /run/initramfs ] && echo yes || echo no)"
	fi
}

check_systemd() {
	local comm exe
	read -r comm </proc/1/comm
	exe=$(readlink /proc/1/exe)
	if [ "$comm" = systemd ]; then
		ktap_ok "PID 1 is systemd ($exe, $(systemctl --version | head -n 1))"
	else
		ktap_not_ok "PID 1 is '$comm' ($exe)" "want systemd"
	fi
}

# ---- thermald and the cooling device ----

check_thermald() {
	local state product wanted
	state=$(systemctl is-active thermald.service)
	if [ "$state" = active ]; then
		ktap_ok "thermald.service active (drop-ins: $(systemctl show -P DropInPaths thermald.service))"
	else
		ktap_not_ok "thermald.service is '$state'" "$(journalctl -b -u thermald.service -o cat --no-pager | tail -n 3 | paste -sd'|')"
	fi
	product=$(cat /sys/class/dmi/id/product_name 2>/dev/null)
	wanted=$(conf_value ProductName)
	# an exact match logs "Product Name matched", a wildcard adds "[wildcard]"
	if [ "$product" = "$wanted" ] && journalctl -b -u thermald.service -o cat --no-pager |
		grep -q 'Product Name matched *$'; then
		ktap_ok "thermald took the configuration made for this product ('$product')"
	else
		ktap_not_ok "thermald's configuration for '$wanted', DMI product '$product'" \
			"want the same name and 'Product Name matched' in thermald's journal"
	fi
}

check_cooling_device() {
	if [ -n "$CDEV" ] && [ -d /sys/module/intel_powerclamp ]; then
		ktap_ok "${CDEV##*/}: intel_powerclamp, max_state $(cat "$CDEV/max_state"), module loaded at boot"
	else
		ktap_not_ok "no intel_powerclamp cooling device" \
			"module loaded: $([ -d /sys/module/intel_powerclamp ] && echo yes || echo no)"
	fi
}

check_idle_package() {
	if [ -n "$ZONE" ] && wait_until "$COOL_S" cool_and_free; then
		ktap_ok "idle: package at $(temp_c) C, below the $TRIP_C C trip by 3 or more, not clamped (after $WAITED s)"
	else
		ktap_not_ok "idle: package at $(temp_c) C, cur_state $(cur_state) after $COOL_S s" \
			"want at most $TRIP_C - 3 C and cur_state 0 (x86_pkg_temp zone: ${ZONE:-none})"
	fi
}

# ---- clamping under load, suspend and resume ----

check_clamp_under_load() {
	start_loads
	if wait_until "$CLAMP_S" clamping; then
		ktap_ok "busy loop on each of $NCPU CPUs: thermald set cur_state $(cur_state) after $WAITED s (package $(temp_c) C)"
	else
		ktap_not_ok "busy loop on each of $NCPU CPUs: cur_state still $(cur_state) after $CLAMP_S s" \
			"package $(temp_c) C, trip $TRIP_C C"
	fi
	sleep "$SETTLE_S"
	clamp_window "clamped under load"
}

check_suspend() {
	local mem_sleep alarm out rc=1 real0 after asleep
	mem_sleep=$(cat /sys/power/mem_sleep 2>/dev/null)
	if [[ $mem_sleep == *"[deep]"* ]]; then
		ktap_ok "suspend to RAM is S3: /sys/power/mem_sleep '$mem_sleep'"
	else
		ktap_not_ok "/sys/power/mem_sleep '$mem_sleep'" "want [deep] selected"
	fi
	out=$(rtcwake -m no -s "$WAKE_S" 2>&1) && rc=0
	out=${out//$'\n'/ } # (a KTAP result is one line)
	alarm=$(cat "$RTC/wakealarm" 2>/dev/null)
	if ((rc == 0)) && [ -n "$alarm" ]; then
		ktap_ok "rtcwake -m no -s $WAKE_S: RTC alarm at $alarm ($out)"
	else
		ktap_not_ok "rtcwake -m no -s $WAKE_S: exit $rc, alarm '$alarm'" "$out"
		# without an alarm nothing would wake the guest
		ktap_not_ok "systemctl suspend" "not tried: no RTC alarm"
		ktap_not_ok "suspend and resume" "not tried"
		ktap_not_ok "woken by the RTC" "not tried"
		return
	fi
	SUSPENDS_BEFORE=$(suspend_count)
	real0=$(date +%s)
	ktap_diag "before suspend: cur_state $(cur_state), package $(temp_c) C, suspends so far $SUSPENDS_BEFORE"
	if out=$(systemctl suspend 2>&1); then
		ktap_ok "systemctl suspend with the clamp on"
	else
		ktap_not_ok "systemctl suspend: ${out//$'\n'/ }"
	fi
	# (this shell is frozen with the rest of user space, and sleep does
	# not count the time suspended)
	if wait_until "$RESUME_S" resumed &&
		[[ $(kernel_log | grep 'PM: suspend entry' | tail -n 1) == *"(deep)"* ]]; then
		asleep=$(($(date +%s) - real0 - WAITED))
		ktap_ok "suspended to RAM (deep) and resumed: suspend_stats success $SUSPENDS_BEFORE -> $(suspend_count), about $asleep s asleep"
	else
		ktap_not_ok "suspend_stats success still $(suspend_count) after $RESUME_S s, or no deep entry" \
			"kernel: $(kernel_log | grep 'PM: suspend' | tail -n 2 | paste -sd'|')"
	fi
	# QEMU has no other wake source here; the RTC at or past the alarm
	# says it was the alarm
	after=$(cat "$RTC/since_epoch" 2>/dev/null || echo 0)
	if ((after >= alarm)); then
		ktap_ok "woken by the RTC alarm: RTC at $after, alarm was $alarm (still pending: '$(cat "$RTC/wakealarm" 2>/dev/null)')"
	else
		ktap_not_ok "RTC at $after, before the alarm at $alarm" "woken by something else"
	fi
}

check_after_resume() {
	local state
	if wait_until "$RECLAMP_S" clamping; then
		ktap_ok "after resume: thermald clamps, cur_state $(cur_state) after $WAITED s (package $(temp_c) C)"
	else
		ktap_not_ok "after resume: cur_state $(cur_state) after $RECLAMP_S s" "package $(temp_c) C, trip $TRIP_C C"
	fi
	clamp_window "after resume, still under load"
	state=$(systemctl is-active thermald.service)
	if [ "$state" = active ]; then
		ktap_ok "thermald.service still active after resume"
	else
		ktap_not_ok "thermald.service is '$state' after resume"
	fi
	stop_loads
	if wait_until "$RELEASE_S" released; then
		ktap_ok "load gone: thermald released the clamp after $WAITED s (package $(temp_c) C)"
	else
		ktap_not_ok "load gone: cur_state still $(cur_state) after $RELEASE_S s" "package $(temp_c) C"
	fi
}

main() {
	trap stop_loads EXIT
	ktap_begin "$PLAN"
	ktap_diag "$(uname -r) $(uname -v), $NCPU CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	check_kernel_package
	check_initramfs "$(uname -r)"
	check_systemd
	check_thermald
	check_cooling_device
	check_idle_package
	check_clamp_under_load
	check_suspend
	check_after_resume
	ktap_diag "thermald: $(journalctl -b -u thermald.service -o cat --no-pager | tail -n 5 | paste -sd'|')"
	ktap_end
	echo "powerclamp-deb-check: $KTAP_PASSED passed, $KTAP_FAILED failed"
	((KTAP_FAILED == 0 && KTAP_N == PLAN))
}

CDEV=$(of_type /sys/class/thermal/cooling_device intel_powerclamp)
ZONE=$(of_type /sys/class/thermal/thermal_zone x86_pkg_temp)
TRIP_C=$(awk -v t="$(conf_value Temperature)" 'BEGIN { printf "%.1f\n", t / 1000 }')
SUSPENDS_BEFORE=0
WAITED=0
if [ -c "$KTAP_TTY" ] && stty -F "$KTAP_TTY" raw -echo 2>/dev/null; then
	main | tee "$KTAP_TTY"
	rc=${PIPESTATUS[0]}
else
	main
	rc=$?
fi
((POWEROFF == 0)) || systemctl --no-block poweroff
exit "$rc"
