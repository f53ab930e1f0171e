#!/bin/bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015
# Guest-side checks of the PowerClamp driver, run by the test init inside
# QEMU. Each check prints one TAP line with the values it read; the run ends
# with "guest: N passed, N failed" and exits non-zero if anything failed.
#
# Throttling is judged by the work the loads get per wall-clock second (their
# runtime from /proc/PID/schedstat), and the idle the system shows by
# /proc/stat deltas, as shared/MEASURED.md prescribes.
set -u

MODULE=intel_powerclamp
DEBUG_DIR=/sys/kernel/debug/intel_powerclamp
PARAMS=/sys/module/$MODULE/parameters
NCPU=$(nproc --all)
# Tolerances, in percentage points (issue 8's are the 2s). Measured over 6
# boots with patches 10-11 on an otherwise idle 2-core host, kernel without
# debug options (README): idle within 0.4 of target, work lost to the clamp
# within 1.2, driver within 0.3 of /proc/stat, ticks 99.2-100.2 % of wall,
# work lost 0.4-1.5 points above idle shown (the injection's own busy time,
# ~0.5 ms a period under TCG). Windows are 10 s to keep noise well inside.
TOL_TARGET=${TOL_TARGET:-3}        # /proc/stat idle and work lost vs target
TOL_LOST=${TOL_LOST:-2}            # /proc/stat idle and driver vs work lost
TOL_DRIVER=${TOL_DRIVER:-2}        # driver's measured ratio vs /proc/stat idle
TOL_TICKS_PCT=${TOL_TICKS_PCT:-2}  # /proc/stat ticks vs wall time (%)

# Stress counts (issue 4). pc.scale=P on the kernel command line runs P %
# of them for a quick look; the test suite runs them in full.
SCALE=${PC_SCALE:-100}
STRESS_WRITES=$((1000 * SCALE / 100))   # cur_state writes, from 4 writers
STRESS_HOTPLUG=$((100 * SCALE / 100))   # offline/online cycles
STRESS_UNLOADS=$((100 * SCALE / 100))   # rmmod/modprobe cycles
SOAK_S=$((60 * SCALE / 100))            # seconds at 49 % under mixed load

n=0
passed=0
rejected=0
failed=0
LOADS=()

# ---- TAP helpers ----

pass() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

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

# ---- guest state readers ----

cdev_dir() {
	local d type
	for d in /sys/class/thermal/cooling_device*; do
		read -r type 2>/dev/null <"$d/type" || continue
		[ "$type" = "$MODULE" ] && { echo "$d"; return; }
	done
}

# PIDs of the injection threads, one "pid cpu" line each, sorted by CPU.
# (read, not cat: the stress checks call this hundreds of times)
clamp_threads() {
	local p comm
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		case "$comm" in
		kidle_inject/*) echo "${p#/proc/} ${comm#kidle_inject/}" ;;
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

start_loads() {
	local cpu
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		taskset -c "$cpu" bash -c 'while :; do :; done' &
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
# total ticks, the loads' runtime (ns), and the driver's measured_idle,
# measured_total and injected_ms (0 when not loaded).
snapshot() {
	local files=(/proc/uptime /proc/stat)
	local pid
	for pid in "${LOADS[@]}"; do files+=("/proc/$pid/schedstat"); done
	[ -r "$DEBUG_DIR/stats" ] && files+=("$DEBUG_DIR/stats")
	awk 'FILENAME == "/proc/uptime" { up = $1 }
	     FILENAME == "/proc/stat" && $1 == "cpu" {
		for (i = 2; i <= 9; i++) tot += $i; idle = $5 + $6 }
	     FILENAME ~ /schedstat$/ { rt += $1 }
	     $1 == "measured_idle:" { mi = $2 }
	     $1 == "measured_total:" { mt = $2 }
	     $1 == "injected_ms:" { inj = $2 }
	     END { printf "%s %d %d %.0f %.0f %.0f %d\n", up, idle, tot, rt, mi, mt, inj }' \
		"${files[@]}"
}

# Measure over SECONDS with the loads running. Prints, in percent of the
# CPUs' wall time: idle shown by /proc/stat, work the loads lost, ticks
# /proc/stat accounted, idle the driver measured (from its cumulative
# counters) and idle the driver injected.
measure_window() {
	local a b
	read -r -a a < <(snapshot)
	sleep "$1"
	read -r -a b < <(snapshot)
	awk -v n="$NCPU" -v u0="${a[0]}" -v u1="${b[0]}" \
	    -v idle="$((b[1] - a[1]))" -v ticks="$((b[2] - a[2]))" \
	    -v rt="$((b[3] - a[3]))" -v mi="$((b[4] - a[4]))" \
	    -v mt="$((b[5] - a[5]))" -v inj="$((b[6] - a[6]))" 'BEGIN {
		wall = (u1 - u0) * n	# CPU-seconds of wall time
		printf "%.1f %.1f %.1f %.1f %.1f\n", idle / wall,
			100 - 100 * rt / 1e9 / wall, ticks / wall,
			mt ? 100 * mi / mt : -1, inj / 10 / wall
	}'
}

# ---- the checks ----

check_kunit() {
	local results=/sys/kernel/debug/kunit/$MODULE/results line
	if [ ! -r "$results" ]; then
		fail "kunit: no results at $results"
		return
	fi
	while read -r line; do
		case "$line" in
		"ok "*pc_test_*) pass "kunit: ${line#ok }" ;;
		"not ok "*pc_test_*) fail "kunit: ${line#not ok }" ;;
		esac
	done <"$results"
	grep -q "^ok .* $MODULE\$" "$results" && pass "kunit: suite $MODULE" ||
		fail "kunit: suite $MODULE did not pass"
}

check_load_and_device() {
	modprobe "$MODULE" || { fail "modprobe $MODULE"; return 1; }
	pass "modprobe $MODULE"
	CDEV=$(cdev_dir)
	[ -n "$CDEV" ] || { fail "no cooling device of type $MODULE"; return 1; }
	pass "cooling device $CDEV has type $MODULE"
	expect "max_state" "$(cat "$CDEV/max_state")" 50
	expect "cur_state when idle" "$(cat "$CDEV/cur_state")" 0
	expect "no kidle_inject threads at target 0" "$(clamp_threads | wc -l)" 0
	expect "feedback source (MSRs read 0 under TCG)" "$(stat_field feedback_source)" cpu-idle-time
	expect "feedback source logged once" \
		"$(dmesg | grep -c "$MODULE: feedback from cpu-idle-time")" 1
	grep -q '^pct confidence steady dynamic' "$DEBUG_DIR/powerclamp_calib" &&
		pass "powerclamp_calib header" || fail "powerclamp_calib header"
	expect "powerclamp_calib rows 0..50 (max_idle)" "$(calib_rows)" 51
}

check_threads() {
	local want=$1 pid cpu status policy prio flags bad=0 got
	got=$(clamp_threads | awk '{ print $2 }' | paste -sd,)
	expect "one kidle_inject/N per online CPU ($2)" "$got" "$want"
	while read -r pid cpu; do
		status=$(grep Cpus_allowed_list "/proc/$pid/status" | awk '{ print $2 }')
		read -r policy prio flags < <(sed 's/.*) //' "/proc/$pid/stat" |
			awk '{ print $39, $38, $7 }')
		if [ "$status" != "$cpu" ] || [ "$policy" != 1 ] || [ "$prio" != 50 ] ||
			(((flags & 0x8000) != 0)); then
			fail "kidle_inject/$cpu: cpus=$status policy=$policy rt_prio=$prio flags=$flags"
			bad=1
		fi
	done < <(clamp_threads)
	((bad)) || pass "threads bound to their CPU, SCHED_FIFO prio 50, freezable"
}

check_start_stop() {
	local pids_before pids_after t0
	set_target 25
	expect "cur_state reads back the target" "$(cat "$CDEV/cur_state")" 25
	sleep 1
	check_threads "$(online_cpus | paste -sd,)" "start"
	pids_before=$(clamp_threads | awk '{ print $1 }' | paste -sd,)
	set_target 40
	expect "retarget keeps the threads" \
		"$(clamp_threads | awk '{ print $1 }' | paste -sd,)" "$pids_before"
	expect "cur_state after retarget" "$(cat "$CDEV/cur_state")" 40
	set_target 50
	expect "target 50 (max_state) reads back" "$(cat "$CDEV/cur_state")" 50
	t0=$(now_ns)
	set_target 0
	echo "# stopping took $((($(now_ns) - t0) / 1000000)) ms"
	pids_after=$(clamp_threads | wc -l)
	expect "stop removes every thread" "$pids_after" 0
	expect "cur_state after stop" "$(cat "$CDEV/cur_state")" 0
}

check_accuracy() {
	local target m idle lost ticks drv inj base_lost base_ticks clamp_lost
	start_loads
	sleep 1
	read -r _ base_lost base_ticks _ _ < <(measure_window 10)
	echo "# unclamped: the loads lose $base_lost% of wall time, /proc/stat accounts $base_ticks% of it"
	for target in 10 25 40 49; do
		set_target "$target"
		sleep 3 # let the first windows and the calibration pass
		read -r idle lost ticks drv inj < <(measure_window 10)
		clamp_lost=$(awk -v a="$lost" -v b="$base_lost" 'BEGIN { printf "%.1f", a - b }')
		echo "# target $target: /proc/stat idle $idle%, work lost $lost% ($clamp_lost% to the clamp), ticks $ticks% of wall, driver measured $drv%, injected $inj%"
		echo "# stats: $(paste -sd' ' "$DEBUG_DIR/stats")"
		within "target $target: /proc/stat idle vs target" "$idle" "$target" "$TOL_TARGET"
		within "target $target: work lost to the clamp vs target" "$clamp_lost" "$target" "$TOL_TARGET"
		within "target $target: /proc/stat idle vs work lost to the clamp" "$idle" "$clamp_lost" "$TOL_LOST"
		within "target $target: /proc/stat ticks (% of wall)" "$ticks" 100 "$TOL_TICKS_PCT"
		within "target $target: driver's measured ratio vs /proc/stat idle" "$drv" "$idle" "$TOL_DRIVER"
		within "target $target: driver's measured ratio vs work lost to the clamp" "$drv" "$clamp_lost" "$TOL_LOST"
		within "target $target: idle injected (% of wall) vs target" "$inj" "$target" 5
	done
	set_target 0
	stop_loads
	m=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	((m > 0)) && pass "calibration learnt ($m ratios with confidence)" ||
		fail "calibration table untouched after clamping under load"
}

check_skip_when_idle() {
	local s0 s1 w0 w1 i0 i1
	set_target 25
	sleep 2
	s0=$(stat_field windows_skipped)
	w0=$(stat_field windows)
	i0=$(stat_field injections)
	sleep 4
	s1=$(stat_field windows_skipped)
	w1=$(stat_field windows)
	i1=$(stat_field injections)
	set_target 0
	# the counters are read one after the other: allow one window of skew
	if ((w1 > w0 && s1 - s0 >= w1 - w0 - 1)); then
		pass "idle system: every window skipped ($((s1 - s0)) of $((w1 - w0)))"
	else
		fail "idle system: $((s1 - s0)) of $((w1 - w0)) windows skipped"
	fi
	((i1 - i0 <= NCPU)) && pass "idle system: injections stop ($((i1 - i0)) in 4 s)" ||
		fail "idle system: $((i1 - i0)) injections in 4 s"
}

# Synchronisation: record when each kidle_inject thread is switched in (the
# start of an injection) and group the starts by boundary. Every CPU should
# start at every boundary, within a jiffy or so of the others.
check_sync() {
	local t=/sys/kernel/tracing ev groups full median max
	ev=$t/events/sched/sched_switch
	[ -d "$ev" ] || { fail "sync: no sched_switch trace event"; return; }
	start_loads
	set_target 25
	sleep 2
	echo global >"$t/trace_clock"
	echo 'next_comm ~ "kidle_inject*"' >"$ev/filter"
	echo >"$t/trace"
	echo 1 >"$ev/enable"
	sleep 3
	echo 0 >"$ev/enable"
	set_target 0
	stop_loads
	# groups: starts less than half an interval (96 ms at 25 %) apart
	read -r groups full median max < <(awk -v n="$NCPU" '
		/ sched_switch: / {
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^[0-9]+\.[0-9]+:$/) ts = $i + 0
				if ($i ~ /^next_comm=kidle_inject\//) cpu = substr($i, 24)
			}
			print ts, cpu
		}' "$t/trace" | sort -n | awk -v n="$NCPU" '
		function close_group() {
			if (!g) return
			c = 0; for (k in seen) c++
			if (c == n) { full++; sp[full] = (last - first) * 1000 }
			delete seen
		}
		{ if (!g || $1 - first > 0.048) { close_group(); g++; first = $1 }
		  seen[$2] = 1; last = $1 }
		END {
			close_group()
			for (i = 1; i <= full; i++) for (j = i + 1; j <= full; j++)
				if (sp[j] < sp[i]) { x = sp[i]; sp[i] = sp[j]; sp[j] = x }
			printf "%d %d %.2f %.2f\n", g, full, full ? sp[int((full + 1) / 2)] : -1, full ? sp[full] : -1
		}')
	echo "# sync: $groups boundaries, $full with every CPU injecting; spread median $median ms, max $max ms"
	if ((groups > 10 && full * 10 >= groups * 9)); then
		pass "sync: every CPU injects at >= 90% of the boundaries ($full of $groups)"
	else
		fail "sync: only $full of $groups boundaries had every CPU injecting"
	fi
	within "sync: median spread of injection starts across CPUs (ms)" "$median" 0 4
	echo >"$t/trace"
	echo 0 >"$ev/filter"
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
check_trace_events() {
	local ev=/sys/kernel/tracing/events/powerclamp summary
	local inj cpus planned idle_share bad_lost win win_target skipped measured
	[ -d "$ev" ] || { fail "trace: no powerclamp events in tracefs"; return; }
	expect "trace: powerclamp events" "$(cd "$ev" && echo powerclamp_*)" \
		"powerclamp_injection powerclamp_window"
	start_loads
	set_target 25
	sleep 2
	trace_powerclamp 3
	set_target 0
	stop_loads
	# injections, CPUs, median planned us, idle/planned %, lost > planned,
	# windows, windows at target 25, skipped, mean measured per mille
	summary=$(awk '
		function field(name,   i) {
			for (i = 1; i <= NF; i++)
				if (index($i, name "=") == 1) return substr($i, length(name) + 2) + 0
		}
		/ powerclamp_injection: / {
			inj++; cpu[field("cpu")] = 1; p = field("planned_us")
			pl[inj] = p; psum += p; isum += field("idle_us")
			if (field("lost_us") > p) badlost++
		}
		/ powerclamp_window: / {
			win++; if (field("target") == 25) wt++
			if (field("skip") == 1) sk++
			m = field("measured_permille"); if (m >= 0) { msum += m; mn++ }
		}
		END {
			for (i = 1; i <= inj; i++) for (j = i + 1; j <= inj; j++)
				if (pl[j] < pl[i]) { x = pl[i]; pl[i] = pl[j]; pl[j] = x }
			c = ""; for (k in cpu) c = c (c == "" ? "" : ",") k
			printf "%d %s %d %.1f %d %d %d %d %.0f\n", inj, c == "" ? "-" : c,
				inj ? pl[int((inj + 1) / 2)] : 0, psum ? 100 * isum / psum : 0,
				badlost, win, wt, sk, mn ? msum / mn : -1
		}' /tmp/powerclamp.trace)
	read -r inj cpus planned idle_share bad_lost win win_target skipped measured <<<"$summary"
	echo "# trace, 3 s at 25 % under load: $inj injections on CPUs $cpus, median planned $planned us, idle $idle_share % of planned; $win windows, $skipped skipped, mean measured $measured per mille"
	expect "trace: injections seen on every online CPU" \
		"$(tr ',' '\n' <<<"$cpus" | sort -n | paste -sd,)" "$(online_cpus | paste -sd,)"
	((inj >= 3 * NCPU * 3 / 2)) && pass "trace: $inj injections in 3 s (>= 4.5 per CPU per s at 25 %)" ||
		fail "trace: only $inj injections in 3 s"
	within "trace: median planned idle per period (us, duration 24 ms)" "$planned" 24000 2500
	# (more than 100 % when periods overrun: timer latency under TCG)
	awk -v v="$idle_share" 'BEGIN { exit !(v >= 85) }' &&
		pass "trace: idle the CPUs accounted is >= 85 % of planned ($idle_share %)" ||
		fail "trace: idle the CPUs accounted is $idle_share % of planned"
	expect "trace: injections reporting more lost than planned" "$bad_lost" 0
	((win >= 5)) && pass "trace: $win control windows in 3 s" || fail "trace: only $win windows in 3 s"
	expect "trace: every window at target 25" "$win_target" "$win"
	expect "trace: no window skipped under load" "$skipped" 0
	within "trace: mean measured ratio (per mille) vs target" "$measured" 250 40

	set_target 25
	sleep 2
	trace_powerclamp 3
	set_target 0
	skipped=$(grep -c ' powerclamp_window: .* skip=1' /tmp/powerclamp.trace)
	win=$(grep -c ' powerclamp_window: ' /tmp/powerclamp.trace)
	((win > 0 && skipped >= win - 1)) && pass "trace: idle system, windows skipped ($skipped of $win)" ||
		fail "trace: idle system, $skipped of $win windows skipped"
}

# write_rejected DESCRIPTION FILE VALUE [ERROR]: the write must fail (with
# ERROR, default "Invalid argument") and the value stay
write_rejected() {
	local before after err want=${4:-Invalid argument}
	before=$(cat "$2")
	err=$(printf '%s\n' "$3" 2>&1 >"$2") && { fail "$1: write accepted"; return; }
	after=$(cat "$2")
	if [ "${err##*: }" != "$want" ]; then
		fail "$1: rejected with '${err##*: }', want '$want'"
	elif [ "$after" = "$before" ]; then
		rejected=$((rejected + 1))
		pass "$1: rejected (${err##*: }), value still $after"
	else
		fail "$1: rejected but value changed $before -> $after"
	fi
}

check_params() {
	local p v
	expect "duration default (ms)" "$(cat $PARAMS/duration)" 24
	expect "window_size default" "$(cat $PARAMS/window_size)" 2
	for p in duration window_size; do
		for v in "" " " abc -1 5abc 0x10 0 1 101 \
			"$(printf '9%.0s' {1..300})" "$(printf '\001\377\002')"; do
			write_rejected "$p <- '$(printf '%q' "$v" | cut -c1-20)'" "$PARAMS/$p" "$v"
		done
	done
	write_rejected "duration <- 64 KiB of junk" "$PARAMS/duration" \
		"$(head -c 65536 /dev/zero | tr '\0' 'x')"
	dmesg | grep -q "duration: expected a decimal integer in 4..100" &&
		pass "invalid parameter logs why" || fail "no log line for an invalid parameter"
	echo 10 >$PARAMS/duration && expect "duration accepts 10" "$(cat $PARAMS/duration)" 10
	echo 5 >$PARAMS/window_size && expect "window_size accepts 5" "$(cat $PARAMS/window_size)" 5
	echo 24 >$PARAMS/duration
	echo 2 >$PARAMS/window_size
}

# Hostile text to cur_state while clamping, so that "unchanged" means the
# running target survives. The thermal core parses it (patch 0007 makes
# that strict): every write must fail with EINVAL and change nothing.
check_hostile_cur_state() {
	local v
	set_target 15
	for v in "" " " abc -1 5abc 0x10 51 " 7" "$(printf '9%.0s' {1..300})" \
		"$(printf '\001\377\002')"; do
		write_rejected "cur_state <- '$(printf '%q' "$v" | cut -c1-20)'" "$CDEV/cur_state" "$v"
	done
	write_rejected "cur_state <- 64 KiB of junk" "$CDEV/cur_state" \
		"$(head -c 65536 /dev/zero | tr '\0' 'x')"
	check_threads "$(online_cpus | paste -sd,)" "still clamping after hostile input"
	set_target 0
	echo "# hostile input: $rejected writes rejected so far, each leaving the value unchanged"
}

check_unprivileged() {
	local f
	for f in "$CDEV/cur_state" "$PARAMS/duration" "$PARAMS/window_size" \
		"$PARAMS/max_idle" "$PARAMS/cpumask"; do
		if setpriv --reuid=65534 --regid=65534 --clear-groups \
			sh -c "echo 10 > $f" 2>/dev/null; then
			fail "unprivileged write to $f accepted"
		else
			pass "unprivileged write to $f refused (EACCES)"
		fi
	done
	expect "cur_state unchanged by the unprivileged user" "$(cat "$CDEV/cur_state")" 0
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
check_controller() {
	local ctl=powerclamp-ctl temp=/tmp/plant-temp log=/tmp/ctl.log plant summary
	local settle mean_err max_err tmin tmax under last
	command -v "$ctl" >/dev/null || { fail "controller: $ctl not installed"; return; }
	expect_failure "controller: no arguments is a usage error" 2 "--sensor and --setpoint are required" "$ctl"
	expect_failure "controller: bad gain" 2 "--kp: 'x' is not a number" "$ctl" -s /proc/uptime -p 1 --kp x
	expect_failure "controller: missing sensor" 1 "cannot read sensor /nonexistent" \
		"$ctl" -s /nonexistent -p 60
	expect_failure "controller: missing cooling device dir" 1 "cannot read /nonexistent/max_state" \
		"$ctl" -s /proc/uptime -p 60 -c /nonexistent
	rmmod "$MODULE"
	expect_failure "controller: module not loaded" 1 "no cooling device of type $MODULE" \
		"$ctl" -s /proc/uptime -p 60
	modprobe "$MODULE"
	CDEV=$(cdev_dir)

	start_loads
	pc-plant "$temp" 30 60 3 100 &
	plant=$!
	sleep 1
	"$ctl" -s "$temp" -S 0.001 -p 66 -i 500 -n 6 --dry-run >"$log"
	last=$(awk -F'target=' '/^t=/ { t = $2 } END { print t + 0 }' "$log")
	((last > 0)) && pass "controller: dry run computes targets (last $last)" ||
		fail "controller: dry run computed no target"
	expect "controller: dry run leaves cur_state alone" "$(cat "$CDEV/cur_state")" 0

	if "$ctl" -s "$temp" -S 0.001 -p 66 -i 500 -n 80 >"$log"; then
		pass "controller: 40 s closed loop ran"
	else
		fail "controller: exited with $?: $(tail -n 2 "$log")"
	fi
	expect "controller: cur_state back to 0 on exit" "$(cat "$CDEV/cur_state")" 0
	kill "$plant"
	wait "$plant" 2>/dev/null
	stop_loads
	# settle time (|error| <= 2 from then on), over the last 10 s: mean and
	# max |error|, target range; lowest value overall (undershoot)
	summary=$(awk -v sp=66 '/^t=/ {
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 }
			n++; t[n] = v["t"]; e[n] = v["error"]; u[n] = v["target"]
			if (!n0 || v["value"] < lo) lo = v["value"]; n0 = 1
		}
		END {
			settle = -1
			for (i = n; i >= 1; i--) { a = e[i] < 0 ? -e[i] : e[i]; if (a > 2) break }
			if (i < n) settle = t[i + 1]
			for (i = n - 19; i <= n; i++) {
				a = e[i] < 0 ? -e[i] : e[i]; s += a; if (a > m) m = a
				if (i == n - 19 || u[i] < umin) umin = u[i]
				if (i == n - 19 || u[i] > umax) umax = u[i]
			}
			printf "%.1f %.2f %.2f %d %d %.2f\n", settle, s / 20, m, umin, umax, sp - lo
		}' "$log")
	read -r settle mean_err max_err tmin tmax under <<<"$summary"
	echo "# controller: settled (|error| <= 2) after ${settle} s; last 10 s: mean |error| $mean_err, max $max_err, target $tmin..$tmax %; undershoot $under"
	grep '^t=' "$log" | awk 'NR % 4 == 1' | sed 's/^/#   /'
	# How fast it settles is a figure (printed above), not a pass mark: the
	# guest's speed moves with the host's load. It must settle for good,
	# with 10 s to spare at the end of the run.
	awk -v s="$settle" 'BEGIN { exit !(s >= 0 && s <= 30) }' &&
		pass "controller: settles and holds the set point for the last 10 s ($settle s)" ||
		fail "controller: did not settle ($settle)"
	within "controller: mean |error| over the last 10 s (degrees)" "$mean_err" 0 1.5
	within "controller: target swing over the last 10 s (no oscillation, points)" "$((tmax - tmin))" 0 6
	# 66 degrees is 60 % busy: about 40 % less the guest's own idle. A
	# target at a limit would mean the loop lost control.
	((tmin > 0 && tmax < 50)) && pass "controller: steady target inside 0..50 ($tmin..$tmax)" ||
		fail "controller: target at a limit ($tmin..$tmax)"
	awk -v u="$under" 'BEGIN { exit !(u <= 4) }' &&
		pass "controller: undershoot below the set point <= 4 degrees ($under)" ||
		fail "controller: undershoot $under degrees"
}

# load_runtimes: uptime (s), then each load's runtime (ns), in CPU order
load_runtimes() {
	local files=(/proc/uptime) pid
	for pid in "${LOADS[@]}"; do files+=("/proc/$pid/schedstat"); done
	awk 'FILENAME == "/proc/uptime" { printf "%s", $1; next } { printf " %s", $1 }
	     END { print "" }' "${files[@]}"
}

# load_shares SECONDS: each load's share of wall time (%), in CPU order
load_shares() {
	local a b
	read -r -a a < <(load_runtimes)
	sleep "$1"
	read -r -a b < <(load_runtimes)
	awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 2; i <= n; i++)
			printf "%.1f ", 100 * (y[i] - x[i]) / 1e9 / (y[1] - x[1])
		print ""
	}'
}

# Clamp CPUs 0 and 2 only: they get threads and lose time, the others keep
# their throughput; hotplug and the controller stay within the set.
check_cpumask() {
	local all=0-$((NCPU - 1)) last=$((NCPU - 1)) v base shares cpu lost
	expect "cpumask default: every CPU" "$(cat $PARAMS/cpumask)" "$all"
	for v in "" abc 0- 3-1 0x3 0-1,x 1-2:0/1 -1 9999; do
		write_rejected "cpumask <- '$v'" "$PARAMS/cpumask" "$v"
	done
	cpu_online "$last" 0
	write_rejected "cpumask <- offline-only CPU $last" "$PARAMS/cpumask" "$last"
	cpu_online "$last" 1
	dmesg | grep -q "cpumask: no online CPU in '$last'" &&
		pass "offline-only cpumask logs why" || fail "no log line for an offline-only cpumask"
	echo 0,2 >$PARAMS/cpumask
	expect "cpumask accepts 0,2" "$(cat $PARAMS/cpumask)" "0,2"

	start_loads
	sleep 1
	read -r -a base < <(load_shares 3)
	set_target 40
	sleep 2
	list_thread_cpus
	expect "cpumask 0,2: threads only on CPUs 0 and 2" "$THREAD_CPUS" "0 2"
	write_rejected "cpumask while clamping" "$PARAMS/cpumask" "$all" "Device or resource busy"
	read -r -a shares < <(load_shares 5)
	echo "# loads' share of wall time unclamped: ${base[*]}; clamping 0,2 at 40 %: ${shares[*]}"
	# 4 vCPUs share 2 host cores here: a load's share of wall time moves by
	# a few points between windows (4.1 seen once), so the bands are wide;
	# clamped (40) and unclamped (0) stay far apart.
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		lost=$(awk -v a="${base[cpu]}" -v b="${shares[cpu]}" 'BEGIN { printf "%.1f", a - b }')
		case $cpu in
		0 | 2) within "cpumask 0,2: cpu$cpu load loses the target (points)" "$lost" 40 10 ;;
		*) within "cpumask 0,2: cpu$cpu load keeps its throughput (points lost)" "$lost" 0 10 ;;
		esac
	done
	cpu_online 0 0
	sleep 1
	expect "cpumask 0,2: controlling cpu moves to cpu2, not cpu1" "$(stat_field controlling_cpu)" 2
	list_thread_cpus
	expect "cpumask 0,2: cpu0 offline leaves the thread on 2" "$THREAD_CPUS" "2"
	cpu_online 0 1
	sleep 1
	list_thread_cpus
	expect "cpumask 0,2: cpu0 back online gets its thread" "$THREAD_CPUS" "0 2"
	set_target 0
	stop_loads
	echo "$all" >$PARAMS/cpumask
	expect "cpumask back to every CPU" "$(cat $PARAMS/cpumask)" "$all"
}

# max_idle is max_state; a new value registers the cooling device again.
check_max_idle() {
	local v cdev_before=$CDEV lost
	expect "max_idle default" "$(cat $PARAMS/max_idle)" 50
	for v in "" 0 101 abc -1 5abc 0x10; do
		write_rejected "max_idle <- '$v'" "$PARAMS/max_idle" "$v"
	done
	set_target 10
	write_rejected "max_idle while clamping" "$PARAMS/max_idle" 70 "Device or resource busy"
	dmesg | grep -q "max_idle: cannot change while clamping" &&
		pass "max_idle while clamping logs why" || fail "no log line for max_idle while clamping"
	set_target 0

	echo 70 >$PARAMS/max_idle
	CDEV=$(cdev_dir)
	expect "max_idle 70: max_state" "$(cat "$CDEV/max_state")" 70
	expect "max_idle 70: cooling device keeps its number" "$CDEV" "$cdev_before"
	expect "max_idle 70: powerclamp_calib rows 0..70" "$(calib_rows)" 71
	write_rejected "max_idle 70: cur_state <- 71" "$CDEV/cur_state" 71
	start_loads
	set_target 70
	expect "max_idle 70: cur_state reads back 70" "$(cat "$CDEV/cur_state")" 70
	sleep 3
	read -r _ lost _ _ _ < <(measure_window 4)
	# (includes what the loads lose unclamped: 3-7 points on 4 vCPUs sharing 2 cores)
	within "max_idle 70: the loads lose 70 % (points)" "$lost" 70 10
	set_target 0
	stop_loads

	echo 20 >$PARAMS/max_idle
	CDEV=$(cdev_dir)
	expect "max_idle 20: max_state" "$(cat "$CDEV/max_state")" 20
	write_rejected "max_idle 20: cur_state <- 25" "$CDEV/cur_state" 25
	echo 50 >$PARAMS/max_idle
	CDEV=$(cdev_dir)
	expect "max_idle back to 50: max_state" "$(cat "$CDEV/max_state")" 50
}

check_hotplug() {
	local ctl
	if [ ! -f /sys/devices/system/cpu/cpu1/online ]; then
		fail "cpu1 cannot be hotplugged"
		return
	fi
	set_target 40
	sleep 1
	cpu_online 2 0
	check_threads "$(online_cpus | paste -sd,)" "cpu2 offline"
	cpu_online 2 1
	sleep 1
	check_threads "$(online_cpus | paste -sd,)" "cpu2 back online"
	if [ -f /sys/devices/system/cpu/cpu0/online ]; then
		expect "controlling cpu is the first online" "$(stat_field controlling_cpu)" 0
		cpu_online 0 0
		sleep 1
		ctl=$(stat_field controlling_cpu)
		expect "controlling cpu re-elected when cpu0 goes offline" "$ctl" 1
		check_threads "$(online_cpus | paste -sd,)" "cpu0 offline"
		w0=$(stat_field windows)
		sleep 2
		(($(stat_field windows) > w0)) && pass "new controlling cpu closes windows" ||
			fail "no window closed after re-election"
		cpu_online 0 1
		sleep 1
		check_threads "$(online_cpus | paste -sd,)" "cpu0 back online"
	else
		fail "cpu0 cannot be hotplugged (CONFIG_BOOTPARAM_HOTPLUG_CPU0)"
	fi
	set_target 0
	expect "no thread left after hotplug and stop" "$(clamp_threads | wc -l)" 0
}

check_freeze() {
	local mode
	if grep -qw mem /sys/power/state; then mode=mem; else mode=freeze; fi
	set_target 30
	sleep 1
	echo freezer >/sys/power/pm_test
	if echo "$mode" >/sys/power/state; then
		pass "pm_test freezer ($mode) with clamping active"
	else
		fail "pm_test freezer ($mode) failed"
	fi
	echo none >/sys/power/pm_test
	sleep 1
	check_threads "$(online_cpus | paste -sd,)" "after thaw"
	set_target 0
}

check_unload() {
	set_target 30
	sleep 1
	if rmmod "$MODULE"; then pass "rmmod while clamping"; else fail "rmmod while clamping"; fi
	expect "no thread after rmmod" "$(clamp_threads | wc -l)" 0
	expect "cooling device gone" "$(cdev_dir)" ""
	[ -d "$DEBUG_DIR" ] && fail "debugfs dir left behind" || pass "debugfs dir removed"
	modprobe "$MODULE" && CDEV=$(cdev_dir) && pass "modprobe again" || fail "modprobe again"
}

check_kmemleak() {
	local f=/sys/kernel/debug/kmemleak leaks
	[ -w "$f" ] || { pass "kmemleak not built in: skipped"; return; }
	rmmod "$MODULE"
	echo scan >"$f"
	sleep 6
	echo scan >"$f"
	leaks=$(grep -c 'unreferenced object' "$f")
	expect "kmemleak: leaks after load/clamp/unload" "$leaks" 0
	[ "$leaks" = 0 ] || head -40 "$f"
}

# On a CPU the driver cannot drive (booted with another -cpu model) the
# module must refuse to load with a one-line reason and leave nothing behind.
check_probe_refused() {
	local vendor arat reason
	vendor=$(awk -F': ' '/^vendor_id/ { print $2; exit }' /proc/cpuinfo)
	arat=$(grep -m1 -cw arat /proc/cpuinfo)
	if modprobe "$MODULE" 2>/dev/null; then
		fail "modprobe succeeded on a $vendor CPU (arat: $arat)"
		return
	fi
	pass "modprobe refused on a $vendor CPU (arat: $arat)"
	reason=$(dmesg | grep -E "$MODULE: (needs an Intel|cannot force idle)" | tail -n 1)
	[ -n "$reason" ] && pass "one-line reason logged: ${reason#*] }" ||
		fail "no reason logged for the refusal"
	expect "no cooling device left" "$(cdev_dir)" ""
	expect "no kidle_inject threads" "$(clamp_threads | wc -l)" 0
}

# ---- stress (issue 4) ----

# Set THREAD_CPUS and ONLINE_CPUS to "0 1 3"-style lists with shell
# builtins only: a fork costs tens of ms in a TCG guest with KASAN, and the
# hotplug stress compares them 200 times.
list_thread_cpus() {
	local f comm cpus=()
	for f in /proc/[0-9]*/comm; do
		read -r comm 2>/dev/null <"$f" || continue
		[[ $comm == kidle_inject/* ]] && cpus[${comm#kidle_inject/}]=1
	done
	THREAD_CPUS=${!cpus[*]}
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

# threads_follow_online: the kidle_inject threads match the online CPUs,
# allowing a hotplug callback up to 2 s to finish.
threads_follow_online() {
	local tries
	for ((tries = 0; tries < 20; tries++)); do
		list_thread_cpus
		list_online_cpus
		[ "$THREAD_CPUS" = "$ONLINE_CPUS" ] && return 0
		sleep 0.1
	done
	echo "# threads on CPUs $THREAD_CPUS, online $ONLINE_CPUS"
	return 1
}

# writer N COUNT: COUNT random start/stop/retarget writes (a third stop)
writer() {
	local i v errors=0
	RANDOM=$(($1 * 7919 + 1))
	for ((i = 0; i < $2; i++)); do
		if ((RANDOM % 3 == 0)); then v=0; else v=$((1 + RANDOM % 50)); fi
		echo "$v" 2>/dev/null >"$CDEV/cur_state" || errors=$((errors + 1))
	done
	echo "$errors" >"/tmp/writer.$1"
}

check_stress_writes() {
	local w pids=() errors t0
	start_loads
	t0=$(now_ns)
	for ((w = 0; w < 4; w++)); do
		writer "$w" $((STRESS_WRITES / 4)) &
		pids+=($!)
	done
	wait "${pids[@]}"
	errors=$(cat /tmp/writer.* | awk '{ s += $1 } END { print s }')
	echo "# $STRESS_WRITES writes from 4 writers in $((($(now_ns) - t0) / 1000000)) ms under load"
	expect "stress: $STRESS_WRITES concurrent cur_state writes, failed writes" "$errors" 0
	set_target 20
	expect "stress: cur_state reads back after the storm" "$(cat "$CDEV/cur_state")" 20
	check_threads "$(online_cpus | paste -sd,)" "after the write storm"
	set_target 0
	expect "stress: no thread after the storm and stop" "$(clamp_threads | wc -l)" 0
	stop_loads
}

check_stress_hotplug() {
	local i cpu bad=0 t0
	set_target 40
	t0=$(now_ns)
	for ((i = 0; i < STRESS_HOTPLUG; i++)); do
		cpu=$((1 + RANDOM % (NCPU - 1)))
		cpu_online "$cpu" 0 || bad=$((bad + 1))
		threads_follow_online || { bad=$((bad + 1)); echo "# cycle $i: cpu$cpu offline"; }
		cpu_online "$cpu" 1 || bad=$((bad + 1))
		threads_follow_online || { bad=$((bad + 1)); echo "# cycle $i: cpu$cpu online"; }
	done
	echo "# $STRESS_HOTPLUG hotplug cycles at 40 % in $((($(now_ns) - t0) / 1000000)) ms"
	expect "stress: $STRESS_HOTPLUG offline/online cycles, transitions with wrong threads" "$bad" 0
	expect "stress: cur_state still 40 after hotplug" "$(cat "$CDEV/cur_state")" 40
	set_target 0
	expect "stress: no thread after hotplug stress and stop" "$(clamp_threads | wc -l)" 0
}

check_stress_unload() {
	local i bad=0 t0
	t0=$(now_ns)
	for ((i = 0; i < STRESS_UNLOADS; i++)); do
		set_target $((10 + i % 40)) || bad=$((bad + 1))
		((i % 2)) && sleep 0.1
		rmmod "$MODULE" || bad=$((bad + 1))
		list_thread_cpus
		[ -z "$THREAD_CPUS" ] || { bad=$((bad + 1)); echo "# cycle $i: threads after rmmod"; }
		modprobe "$MODULE" || { bad=$((bad + 1)); break; }
		CDEV=$(cdev_dir)
	done
	echo "# $STRESS_UNLOADS rmmod/modprobe cycles while clamping in $((($(now_ns) - t0) / 1000000)) ms"
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
	echo "# soak: ${SOAK_S}s at 49 %: $((i1 - i0)) injections, $((w1 - w0)) windows; $(grep -E '^(measured_ratio|idle_lost_to_irq_ms|softirq_deferrals):' "$DEBUG_DIR/stats" | paste -sd' ')"
	((i1 > i0 && w1 > w0)) && pass "soak: still injecting after ${SOAK_S}s of mixed load" ||
		fail "soak: injections $i0 -> $i1, windows $w0 -> $w1"
	check_threads "$(online_cpus | paste -sd,)" "after the soak"
	set_target 0
	stop_loads
	rm -f /var/tmp/soak
}

# Forget leaks suspected before the tests, so the final scan is about them.
[ -w /sys/kernel/debug/kmemleak ] && echo clear >/sys/kernel/debug/kmemleak

echo "TAP version 13"
echo "# $(uname -r), $NCPU CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
# pc.checks=accuracy,hotplug on the kernel command line runs only those.
CHECKS=${PC_CHECKS:-kunit,start_stop,sync,trace_events,accuracy,skip_when_idle,params,cpumask,max_idle,hostile_cur_state,unprivileged,controller,hotplug,freeze,unload,stress_writes,stress_hotplug,stress_unload,soak,kmemleak}
if [ "$CHECKS" = probe_refused ]; then
	check_probe_refused
elif check_load_and_device; then
	for c in ${CHECKS//,/ }; do
		"check_$c"
	done
fi
stop_loads
echo "# stress: $STRESS_WRITES writes, $STRESS_HOTPLUG hotplug cycles, $STRESS_UNLOADS unloads, ${SOAK_S}s soak; $rejected hostile writes rejected"
echo "1..$n"
echo "guest: $passed passed, $failed failed"
((failed == 0))
