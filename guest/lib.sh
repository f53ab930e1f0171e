# Shared by the guest checks: settings, assertions on top of lib/ktap.sh,
# readers of the driver's and the system's state, the loads, and the reset
# that runs before every check. Sourced by run-checks.sh, never run.
# shellcheck shell=bash
# shellcheck disable=SC2034  # settings are read by the check files

MODULE=intel_powerclamp
# A mainline kernel (7.3, 6.12; scripts/lib.sh's PC_TREE) runs the in-tree
# driver on idle_inject: its threads are the smpboot threads idle_inject/N,
# there from boot whether or not anything clamps, and its parameters take
# other forms (cpumask in hex). Only the checks of guest/boots-trees run
# there.
case "$(uname -r)" in
6.1.*) MAINLINE=0 THREAD_COMM=kidle_inject ;;
*) MAINLINE=1 THREAD_COMM=idle_inject ;;
esac
DEBUG_DIR=/sys/kernel/debug/intel_powerclamp
PARAMS=/sys/module/$MODULE/parameters
NCPU=$(nproc --all)
# Tolerances, in percentage points. Measured over 6
# boots with whole-jiffy periods and the overrun trim (then patches 10-11,
# now in patch 6) on an otherwise idle 2-core host, kernel without
# debug options (README): idle within 0.4 of target, work lost to the clamp
# within 1.2, ticks 99.2-100.2 % of wall, work lost 0.4-1.5 points above
# idle shown (the injection's own busy time, ~0.5 ms a period under TCG).
# Windows are 10 s to keep noise well inside. The driver's own measured
# ratio is compared only with the work lost (schedstat, an independent
# reference), never with /proc/stat: both come from get_cpu_idle_time_us().
#
# CI then measured more (run of ffc597b): work lost 2.2-2.3 points above
# idle at targets 40 and 49, and one window at 93.6 % ticks (a vCPU the
# host did not run misses busy ticks). The work lost always
# exceeds the idle by the injection's own cost and never falls short of it,
# so that difference is held to a one-sided band, LOST_OVER_IDLE_MIN..MAX,
# not to +-2 around 0. A kernel that loses the forced idle from /proc/stat
# shows it at 0 instead of the target, and one that drops forced-idle
# ticks shows 100 minus the target: both still fail these bands.
TOL_TARGET=${TOL_TARGET:-3}        # /proc/stat idle and work lost vs target
LOST_OVER_IDLE_MIN=${LOST_OVER_IDLE_MIN:--1}  # work lost minus idle shown
LOST_OVER_IDLE_MAX=${LOST_OVER_IDLE_MAX:-4}
TOL_TICKS_PCT=${TOL_TICKS_PCT:-2}  # /proc/stat ticks vs wall, idle guest (%)
TOL_TICKS_LOADED=${TOL_TICKS_LOADED:-8}  # the same under load (%)
# An idle guest is not quite idle under TCG: the check's own snapshots
# (forks of awk, cat) and the kernel's housekeeping showed as 1.0 and 1.5 %
# busy in two runs (idle 99.0 and 98.5 %, ticks 99.8 and 99.5 % of wall),
# so the band is 2 points, not the 1 first asked for.
TOL_IDLE_PCT=${TOL_IDLE_PCT:-2}    # an idle guest's /proc/stat idle vs wall (%)
# Targets 60..85 with max_idle at its limit: the
# issue asked for 2. CI read 82.2 at 85 in one boot, where 39 periods in
# 17 s were left out for pending softirqs; patch 10 (now in patch 6)
# joins the rest of such a period (85.1 after). The host's noise remains:
# 83.2 at 85 in a boot whose ticks came to 95.3 % of wall. 3, as
# TOL_TARGET; the same band holds the work lost against the threads' run
# time (within 0.7 at each target once both are read by one awk; 2.3
# before, when the threads were read on their own).
TOL_HIGH_TARGET=${TOL_HIGH_TARGET:-3}
# The kidle_inject threads' utime+stime (what top shows) as a share of
# their CPUs: their work outside forced idle, a wakeup and a few samples
# per period, well under a point; before patch 4 left the forced idle out
# of it, about the target.
THREAD_CPUTIME_MAX=${THREAD_CPUTIME_MAX:-3}
# At high targets, the threads' run time minus /proc/stat idle: the
# injection's own cost under TCG, 0.9..2.7 points in one boot, -1.6..3.5
# in 20 readings of 4 CI runs taken apart from the loads' (negative where
# the skew of that read outweighed it). A thread that busy-waited for its
# boundary instead of sleeping would show the rest of its period here.
THREAD_COST_MIN=${THREAD_COST_MIN:--3}
THREAD_COST_MAX=${THREAD_COST_MAX:-6}

# Stress counts. pc.scale=P on the kernel command line runs P %
# of them for a quick look; the test suite runs them in full.
SCALE=${PC_SCALE:-100}
STRESS_WRITES=$((1000 * SCALE / 100))   # cur_state writes, from 4 writers
STRESS_HOTPLUG=$((100 * SCALE / 100))   # offline/online cycles
STRESS_HOTPLUG_SOFTIRQ=$((20 * SCALE / 100))  # the same, under softirq load (about 4.6 s each)
STRESS_UNLOADS=$((100 * SCALE / 100))   # rmmod/modprobe cycles
SOAK_S=$((60 * SCALE / 100))            # seconds at 49 % under mixed load

LOADS=()

# Set on the kernel command line by the host from guest/boots: whether this
# kernel has the debug options (lockdep, kmemleak), so that their absence
# is a failure there and a skip elsewhere.
PC_DEBUG=${PC_DEBUG:-0}

# ---- assertions ----

pass() { ktap_ok "$*"; }
fail() { ktap_not_ok "$*"; }

# expect DESCRIPTION ACTUAL EXPECTED
expect() {
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}

# within DESCRIPTION ACTUAL EXPECTED TOLERANCE (decimals allowed)
within() {
	if awk -v a="$2" -v e="$3" -v t="$4" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(d <= t) }'; then
		pass "$1 ($2, want $3 +- $4)"
	else
		fail "$1: got $2, want $3 +- $4"
	fi
}

# difference A B: A - B to one decimal
difference() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", a - b }'
}

# between DESC VALUE MIN MAX: pass when MIN <= VALUE <= MAX
between() {
	if awk -v a="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(a >= lo && a <= hi) }'; then
		pass "$1 ($2, want $3..$4)"
	else
		fail "$1: got $2, want $3..$4"
	fi
}

# ---- guest state readers ----

cdev_dir() {
	local d type
	for d in /sys/class/thermal/cooling_device*; do
		read -r type 2>/dev/null <"$d/type" || continue
		[ "$type" = "$MODULE" ] && { echo "$d"; return; }
	done
}

# task_state DIR: set TASK_STATE to the state letter of the task at /proc
# DIR (S, R, D, P for parked...), the field right after the ") " that
# closes the comm in its stat; empty if the task is gone. Builtins only.
task_state() {
	local stat
	TASK_STATE=
	read -r stat 2>/dev/null <"$1/stat" || return 0
	stat=${stat##*) }
	TASK_STATE=${stat%% *}
}

# PIDs of the injection threads that are not parked, one "pid cpu" line
# each, sorted by CPU. The threads are smpboot threads (this project's
# kidle_inject/N while clamping, mainline's idle_inject/N from boot): a
# CPU that goes offline keeps its thread, parked, and the same thread is
# unparked when the CPU comes back. list_thread_cpus also names the CPUs
# of the parked ones.
# (read, not cat: the stress checks call this hundreds of times)
clamp_threads() {
	local p comm
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		case "$comm" in
		"$THREAD_COMM"/*)
			task_state "$p"
			case $TASK_STATE in
			P | "") ;;
			*) echo "${p#/proc/} ${comm#"$THREAD_COMM"/}" ;;
			esac
			;;
		esac
	done | sort -n -k2
}

# online CPUs, one per line, from the kernel's range list ("0,2-3")
online_cpus() {
	tr ',' '\n' </sys/devices/system/cpu/online |
		awk -F- '{ last = NF > 1 ? $2 : $1; for (c = $1; c <= last; c++) print c }'
}

calib_rows() { grep -cE '^[0-9]+	[0-9]+	[0-9]+	[0-9]+$' "$DEBUG_DIR/powerclamp_calib"; }

stat_field() { awk -v k="$1:" '$1 == k { print $2 }' "$DEBUG_DIR/stats"; }

now_ns() { date +%s%N; }

# The busy loops carry a marker in their command line so that the reset
# can find any a check left behind.
LOAD_MARK=': pc-load'
start_loads() {
	local cpu
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		taskset -c "$cpu" bash -c "$LOAD_MARK; while :; do :; done" &
		LOADS+=($!)
	done
}

stop_loads() {
	((${#LOADS[@]})) && kill "${LOADS[@]}" 2>/dev/null
	wait 2>/dev/null
	LOADS=()
}

set_target() { echo "$1" >"$CDEV/cur_state"; }

# One snapshot, taken by a single awk so that all values are read within a
# moment of each other even on a busy guest: uptime (s), /proc/stat idle and
# total ticks, the loads' runtime (ns), the driver's measured_idle,
# measured_total, injected_ms and injections (0 when not loaded), and the
# kidle_inject threads' runtime (ns, forced idle included; read through
# task/, so that the awk tells them from the loads). Reading the threads apart from this
# awk skewed their share by up to 3 points: a read under a clamp at 80 %
# takes a second or two, and not the same each time.
snapshot() {
	local files=(/proc/uptime /proc/stat)
	local pid _
	for pid in "${LOADS[@]}"; do files+=("/proc/$pid/schedstat"); done
	while read -r pid _; do
		files+=("/proc/$pid/task/$pid/schedstat")
	done < <(clamp_threads)
	[ -r "$DEBUG_DIR/stats" ] && files+=("$DEBUG_DIR/stats")
	awk 'FILENAME == "/proc/uptime" { up = $1 }
	     FILENAME == "/proc/stat" && $1 == "cpu" {
		for (i = 2; i <= 9; i++) tot += $i; idle = $5 + $6 }
	     FILENAME ~ /^\/proc\/[0-9]+\/schedstat$/ { rt += $1 }
	     FILENAME ~ /\/task\/[0-9]+\/schedstat$/ { thr += $1 }
	     $1 == "measured_idle:" { mi = $2 }
	     $1 == "measured_total:" { mt = $2 }
	     $1 == "injected_ms:" { inj = $2 }
	     $1 == "injections:" { per = $2 }
	     END { printf "%s %d %d %.0f %.0f %.0f %d %.0f %d\n", up, idle, tot, rt,
		   mi, mt, inj, thr, per }' \
		"${files[@]}"
}

# Measure over SECONDS with the loads running. Prints, in percent of the
# CPUs' wall time: idle shown by /proc/stat, work the loads lost, ticks
# /proc/stat accounted, idle the driver measured (from its cumulative
# counters), idle the driver injected, the kidle_inject threads' run time
# (forced idle included; 0 without threads), and the forced idle periods a
# CPU-second (a count, not a percentage). A thread that leaves or
# joins during the window makes its run time meaningless: callers read it
# only with the set of threads unchanged.
measure_window() {
	local a b
	read -r -a a < <(snapshot)
	sleep "$1"
	read -r -a b < <(snapshot)
	awk -v n="$NCPU" -v u0="${a[0]}" -v u1="${b[0]}" \
	    -v idle="$((b[1] - a[1]))" -v ticks="$((b[2] - a[2]))" \
	    -v rt="$((b[3] - a[3]))" -v mi="$((b[4] - a[4]))" \
	    -v mt="$((b[5] - a[5]))" -v inj="$((b[6] - a[6]))" \
	    -v thr="$((b[7] - a[7]))" -v per="$((b[8] - a[8]))" 'BEGIN {
		wall = (u1 - u0) * n	# CPU-seconds of wall time
		printf "%.1f %.1f %.1f %.1f %.1f %.1f %.1f\n", idle / wall,
			100 - 100 * rt / 1e9 / wall, ticks / wall,
			mt ? 100 * mi / mt : -1, inj / 10 / wall,
			100 * thr / 1e9 / wall, per / wall
	}'
}

# assert_threads WANT WHEN: exactly one kidle_inject/N not parked for each
# CPU in WANT (a comma list; an offline CPU's thread is parked), each bound
# to its CPU, SCHED_FIFO priority 50, and not freezable: PF_NOFREEZE set,
# as on every kthread that does not call set_freezable(). The PM notifier
# stops the threads before the freezer; a frozen smpboot thread could not
# be woken by kthread_park(), so taking a CPU down would hang.
assert_threads() {
	local want=$1 pid cpu status policy prio flags bad=0 got
	got=$(clamp_threads | awk '{ print $2 }' | paste -sd,)
	expect "one kidle_inject/N not parked per online CPU ($2)" "$got" "$want"
	while read -r pid cpu; do
		status=$(grep Cpus_allowed_list "/proc/$pid/status" | awk '{ print $2 }')
		read -r policy prio flags < <(sed 's/.*) //' "/proc/$pid/stat" |
			awk '{ print $39, $38, $7 }')
		if [ "$status" != "$cpu" ] || [ "$policy" != 1 ] || [ "$prio" != 50 ] ||
			(((flags & 0x8000) == 0)); then
			fail "kidle_inject/$cpu: cpus=$status policy=$policy rt_prio=$prio flags=$flags"
			bad=1
		fi
	done < <(clamp_threads)
	((bad)) || pass "threads bound to their CPU, SCHED_FIFO prio 50, not freezable (PF_NOFREEZE: the PM notifier stops them before the freezer)"
}

# woken_thread_cpus SECONDS: set WOKEN_CPUS ("0 2"-style, as THREAD_CPUS)
# to the CPUs whose injection thread was scheduled at least once in
# SECONDS: the third field of its /proc/PID/schedstat, the times it was
# put on its CPU, grew. While clamping every online CPU has a thread
# (smpboot has no cpumask), but one outside the driver's cpumask sleeps
# and never runs; a clamped one wakes at least once a period (96 ms at
# 25 % with the default duration of 24 ms). A thread parked or not there
# at the start is not counted.
woken_thread_cpus() {
	local pid cpu n pids=() runs=() woken=()
	while read -r pid cpu; do
		read -r _ _ n 2>/dev/null <"/proc/$pid/schedstat" || continue
		pids[cpu]=$pid runs[cpu]=$n
	done < <(clamp_threads)
	sleep "$1"
	for cpu in "${!pids[@]}"; do
		read -r _ _ n 2>/dev/null <"/proc/${pids[cpu]}/schedstat" || continue
		((n > runs[cpu])) && woken[cpu]=1
	done
	WOKEN_CPUS=${!woken[*]}
}

# trace_powerclamp SECONDS: record the powerclamp events for SECONDS into
# /tmp/powerclamp.trace, one event per line
trace_powerclamp() {
	local t=/sys/kernel/tracing
	echo >"$t/trace"
	echo 1 >"$t/events/powerclamp/enable"
	sleep "$1"
	echo 0 >"$t/events/powerclamp/enable"
	grep -E ' powerclamp_(injection|window): ' "$t/trace" >/tmp/powerclamp.trace
	echo >"$t/trace"
}

# The powerclamp trace events report what the driver did: every CPU's
# injections with the planned period and its idle time, and the windows
# with the target, the measured ratio and the skip decision.
# write_rejected DESCRIPTION FILE VALUE [ERROR]: the write must fail (with
# ERROR, default "Invalid argument") and the value stay
write_rejected() {
	local before after err want=${4:-Invalid argument}
	before=$(cat "$2")
	err=$(printf '%s\n' "$3" 2>&1 >"$2") && {
		fail "$1: write accepted (value $before -> $(cat "$2"))"
		return
	}
	after=$(cat "$2")
	if [ "${err##*: }" != "$want" ]; then
		fail "$1: rejected with '${err##*: }', want '$want'"
	elif [ "$after" = "$before" ]; then
		pass "$1: rejected (${err##*: }), value still $after"
	else
		fail "$1: rejected but value changed $before -> $after"
	fi
}

cpu_online() { echo "$2" >"/sys/devices/system/cpu/cpu$1/online"; }

# expect_failure DESCRIPTION STATUS MESSAGE COMMAND...: COMMAND must exit
# with STATUS and say MESSAGE on stderr
expect_failure() {
	local what=$1 status=$2 message=$3 out rc
	shift 3
	out=$("$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" = "$status" ] && [[ $out == *"$message"* ]]; then
		pass "$what (exit $rc: $out)"
	else
		fail "$what: exit $rc, '$out'; want exit $status and '$message'"
	fi
}

# The user space controller (tools/powerclamp-ctl) against a plant model
# whose temperature follows the guest's busy share: 30 + 60 * busy degrees
# with a 3 s lag. Holding 66 degrees under full load needs 40 % idle if
# the CPUs were fully busy without clamping, less as they are not.

# load_runtimes: uptime (s), each load's runtime (ns) in CPU order, then
# each CPU's idle and iowait ticks (USER_HZ) from /proc/stat, in CPU order
load_runtimes() {
	local files=(/proc/uptime /proc/stat) pid
	for pid in "${LOADS[@]}"; do files+=("/proc/$pid/schedstat"); done
	awk 'FILENAME == "/proc/uptime" { up = $1; next }
	     FILENAME == "/proc/stat" { if ($1 ~ /^cpu[0-9]/) idle[n++] = $5 + $6; next }
	     { runtime = runtime " " $1 }
	     END {
		printf "%s%s", up, runtime
		for (i = 0; i < n; i++) printf " %s", idle[i]
		print ""
	     }' "${files[@]}"
}

# load_shares SECONDS: each load's share of wall time (%) in CPU order, then
# each CPU's idle (% of wall, /proc/stat) in CPU order
load_shares() {
	local a b
	read -r -a a < <(load_runtimes)
	sleep "$1"
	read -r -a b < <(load_runtimes)
	awk -v a="${a[*]}" -v b="${b[*]}" -v loads="${#LOADS[@]}" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		wall = y[1] - x[1]
		for (i = 2; i <= n; i++)
			if (i <= loads + 1)
				printf "%.1f ", 100 * (y[i] - x[i]) / 1e9 / wall
			else
				printf "%.1f ", (y[i] - x[i]) / wall
		print ""
	}'
}

# ---- CPU lists without forks ----

# Set THREAD_CPUS, PARKED_CPUS and ONLINE_CPUS to "0 1 3"-style lists with
# shell builtins only: a fork costs tens of ms in a TCG guest with KASAN,
# and the hotplug stress compares them 200 times. THREAD_CPUS are the CPUs
# whose injection thread is not parked (those clamp_threads lists),
# PARKED_CPUS those whose thread is parked (offline CPUs that were online
# while clamping: their thread stays, parked, until clamping stops).
list_thread_cpus() {
	local p comm cpus=() parked=()
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		[[ $comm == "$THREAD_COMM"/* ]] || continue
		task_state "$p"
		case $TASK_STATE in
		"") ;;
		P) parked[${comm#"$THREAD_COMM"/}]=1 ;;
		*) cpus[${comm#"$THREAD_COMM"/}]=1 ;;
		esac
	done
	THREAD_CPUS=${!cpus[*]}
	PARKED_CPUS=${!parked[*]}
}

list_online_cpus() {
	local f v cpu cpus=()
	for f in /sys/devices/system/cpu/cpu[0-9]*/online; do
		read -r v <"$f"
		cpu=${f%/online}
		((v)) && cpus[${cpu##*cpu}]=1
	done
	ONLINE_CPUS=${!cpus[*]}
}

# threads_follow_online: the kidle_inject threads not parked match the
# online CPUs (an offline CPU's thread is parked), allowing a hotplug
# transition up to 2 s to finish.
threads_follow_online() {
	local tries
	for ((tries = 0; tries < 20; tries++)); do
		list_thread_cpus
		list_online_cpus
		[ "$THREAD_CPUS" = "$ONLINE_CPUS" ] && return 0
		sleep 0.1
	done
	ktap_diag "threads on CPUs $THREAD_CPUS, online $ONLINE_CPUS"
	return 1
}

# writer N COUNT: COUNT random start/stop/retarget writes (a third stop)

# ---- the reset before every check ----

# The defaults a check starts from, as the module declares them.
DEFAULT_DURATION=24
DEFAULT_WINDOW_SIZE=2
DEFAULT_MAX_IDLE=50

# The reset writes to sysfs as root: refuse to run anywhere but in a test
# guest booted by run-qemu.sh.
in_test_guest() { grep -qw 'pc.mode=test' /proc/cmdline 2>/dev/null; }

# reset_state MODULE_WANTED: bring the guest back to where every check
# starts: no load or controller left running, every CPU online, no pm_test
# level, and the module loaded (1) at target 0 with every parameter at its
# default, or not loaded (0). Sets CDEV. On failure it says why on stdout
# and returns 1.
reset_state() {
	local want=$1 f v param value all=0-$((NCPU - 1))
	if ! in_test_guest; then
		echo "not in a test guest (no pc.mode=test on the command line)"
		return 1
	fi
	pkill -f "$LOAD_MARK" 2>/dev/null
	pkill -x pc-plant 2>/dev/null
	pkill -x powerclamp-ctl 2>/dev/null
	pkill -x pc-softirq 2>/dev/null
	[ -w /proc/sys/kernel/panic_on_warn ] && echo 0 >/proc/sys/kernel/panic_on_warn
	[ -w /sys/power/pm_test ] && echo none >/sys/power/pm_test
	# (a CPU that cannot go offline has no online file: one vCPU, CPU 0
	# on AMD)
	for f in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[ -e "$f" ] || continue
		read -r v <"$f"
		[ "$v" = 1 ] || echo 1 >"$f" || { echo "${f%/online} does not come online"; return 1; }
	done
	if [ "$want" = 0 ]; then
		if [ -d "/sys/module/$MODULE" ] && ! rmmod "$MODULE"; then
			echo "rmmod $MODULE failed"
			return 1
		fi
		return 0
	fi
	[ -d "/sys/module/$MODULE" ] || modprobe "$MODULE" || { echo "modprobe $MODULE failed"; return 1; }
	CDEV=$(cdev_dir)
	[ -n "$CDEV" ] || { echo "no cooling device of type $MODULE"; return 1; }
	echo 0 >"$CDEV/cur_state" || { echo "cannot set target 0"; return 1; }
	# the in-tree driver's parameters are left as it loaded them: what
	# its load sets is what the mainline checks judge
	((MAINLINE)) && return 0
	for v in "duration $DEFAULT_DURATION" "window_size $DEFAULT_WINDOW_SIZE" \
		"cpumask $all" "max_idle $DEFAULT_MAX_IDLE"; do
		read -r param value <<<"$v"
		[ "$(cat "$PARAMS/$param")" = "$value" ] && continue
		echo "$value" >"$PARAMS/$param" || { echo "cannot reset $param to $value"; return 1; }
	done
	CDEV=$(cdev_dir) # max_idle registers the cooling device again
	# (at target 0 every thread is gone, parked ones included)
	list_thread_cpus
	[ -z "$THREAD_CPUS$PARKED_CPUS" ] ||
		{ echo "kidle_inject threads left on CPUs '$THREAD_CPUS', parked on CPUs '$PARKED_CPUS'"; return 1; }
	[ "$(cat "$CDEV/cur_state")" = 0 ] || { echo "cur_state is not 0"; return 1; }
}
