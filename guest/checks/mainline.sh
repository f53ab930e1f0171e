# The in-tree intel_powerclamp of a mainline tree (7.3, 6.12: trees/), as
# Debian ships it or with trees/<tree>/series, or this project's 6.1
# driver for the figures beside them, on the emulated package with
# MWAIT advertised and the guest idling with HLT (guest/boots-trees). Judged
# by references the driver does not compute: the work the loads lost
# (their schedstat run time against wall time), /proc/stat's idle and ticks,
# the idle_inject threads' utime and stime as top shows them, and
# turbostat's package C6.
# shellcheck shell=bash

# What /proc/stat may show below or above the work the loads lost to the
# clamp (points): the injection's own cost under TCG, about 1.6 points at
# 49 % with this project's 6.1 driver on the same emulated package.
TOL_IDLE_VS_LOST=${TOL_IDLE_VS_LOST:-2}
# What top may charge the injecting threads (% of their CPUs): they run
# microseconds a period outside forced idle.
MAINLINE_THREAD_MAX=${MAINLINE_THREAD_MAX:-1}
# How far package C6 may fall below the work the loads lost (points).
# With a load on every CPU the package sleeps only while every CPU is in
# forced idle at once, so this is the injection's synchronisation: 0.1 to
# 1.2 points below on 7.3 (2026-12-07), the injection's own cost. Threads
# woken one after another (idle_inject on PREEMPT_RT before trees/7.3's
# patch 10) read 0.0-1.2 % at 10-50.
TOL_PKG_VS_LOST=${TOL_PKG_VS_LOST:-3}

# present_cpus_hex: the cpumask parameter's form (%*pb) of every present CPU
present_cpus_hex() {
	local cpu mask=0
	for cpu in $(tr ',' '\n' </sys/devices/system/cpu/present |
		awk -F- '{ last = NF > 1 ? $2 : $1; for (c = $1; c <= last; c++) print c }'); do
		mask=$((mask | (1 << cpu)))
	done
	printf '%x\n' "$mask"
}

check_mainline_accuracy() {
	local target idle lost ticks ran base_lost clamp_lost c0 c1 t0 ut st pc6 tpid
	# Without CONFIG_CPUMASK_OFFSTACK (on x86 only MAXSMP selects it) the
	# in-tree driver's load left the mask empty, and it clamped no CPU.
	if ((MAINLINE)); then
		expect "cpumask after load: every present CPU" "$(cat "$PARAMS/cpumask")" "$(present_cpus_hex)"
	else # this project's 6.1 driver: a CPU list
		expect "cpumask after load: every CPU" "$(cat "$PARAMS/cpumask")" "0-$((NCPU - 1))"
	fi
	start_loads
	sleep 1
	unclamped_window 10 # sets BASE_LOST and BASE_TICKS (accuracy.sh)
	# shellcheck disable=SC2153 # set by unclamped_window
	base_lost=$BASE_LOST
	ktap_diag "unclamped: the loads lose $base_lost% of wall time, /proc/stat accounts $BASE_TICKS% of it"
	for target in 10 25 40 50; do
		set_target "$target"
		# The in-tree driver clamps a target to max_idle - 1 without a
		# word: at the default max_idle of 50, a write of 50 runs 49.
		ktap_diag "target $target: cur_state reads $(cat "$CDEV/cur_state") after the write"
		sleep 3 # the first windows
		turbostat_pc6 10 >/tmp/pc6 &
		tpid=$!
		c0=$(thread_cputime) t0=$(now_ns)
		read -r idle lost ticks _ _ ran _ < <(measure_window 10)
		c1=$(thread_cputime)
		wait "$tpid" || true
		pc6=$(cat /tmp/pc6)
		clamp_lost=$(difference "$lost" "$base_lost")
		read -r ut st < <(thread_cputime_share "$c0" "$c1" "$(($(now_ns) - t0))")
		ktap_diag "target $target: work lost to the clamp $clamp_lost%, /proc/stat idle $idle%, ticks $ticks% of wall, package C6 ${pc6:-?}% (turbostat)"
		ktap_diag "target $target: $THREAD_COMM threads: utime $ut%, stime $st% of their CPUs, run time (forced idle included) $ran%"
		within "target $target: work lost to the clamp vs target" "$clamp_lost" "$target" "$TOL_TARGET"
		within "target $target: /proc/stat idle vs the work lost to the clamp" \
			"$idle" "$clamp_lost" "$TOL_IDLE_VS_LOST"
		within "target $target: /proc/stat ticks (% of wall)" "$ticks" 100 "$TOL_TICKS_LOADED"
		between "target $target: $THREAD_COMM threads' utime+stime (% of their CPUs)" \
			"$(awk -v u="$ut" -v s="$st" 'BEGIN { printf "%.1f", u + s }')" 0 "$MAINLINE_THREAD_MAX"
		within "target $target: package C6 (turbostat) vs the work lost to the clamp" \
			"${pc6:-0}" "$clamp_lost" "$TOL_PKG_VS_LOST"
	done
	set_target 0
	stop_loads
}

# The cooling device's cur_state takes a decimal number, an optional "+"
# and newline, and nothing else. Linux 6.12 parses it with sscanf("%ld"),
# which takes "5abc" as 5, "0x10" as 0 (clamping stops) and " 7" as 7;
# trees/6.12 carries the change to kstrtoul() that 7.3 already has, and
# this project's 6.1 series its own (patches/0009).
# A number too large for an unsigned long is kstrtoul()'s ERANGE in the
# mainline trees; this project's 6.1 patch answers EINVAL to every refusal.
check_mainline_cur_state() {
	local v too_big_error="Invalid argument"
	((MAINLINE)) && too_big_error="Numerical result out of range"
	set_target 15
	for v in "" " " abc -1 5abc 0x10 " 7" "7 8"; do
		write_rejected "cur_state <- '$(printf '%q' "$v")'" "$CDEV/cur_state" "$v"
	done
	write_rejected "cur_state <- a 300-digit number" "$CDEV/cur_state" \
		"$(printf '9%.0s' {1..300})" "$too_big_error"
	# kstrtoul() takes a leading "+", which 6.12's sscanf() refused: the
	# one input the change lets through.
	if set_target +20; then
		expect "cur_state <- '+20': taken as 20" "$(cat "$CDEV/cur_state")" 20
	else
		fail "cur_state <- '+20': refused (kstrtoul() takes a leading +)"
	fi
	set_target 0
}

# max_idle takes 1 to 100 (the parameter's own description) and must
# refuse 0. As 7.3 and 6.12 ship, 0 was taken and lifted the cap: the
# target is clamped to max_idle - 1, then ULONG_MAX, and cur_state took
# 100, whose calibration entry lies one past the end of cal_data[]
# (trees/<tree>'s max_idle patch). This project's 6.1 driver takes 1..85.
check_mainline_max_idle() {
	local before
	before=$(cat "$PARAMS/max_idle")
	write_rejected "max_idle <- 0" "$PARAMS/max_idle" 0
	if [ "$(cat "$PARAMS/max_idle")" = 0 ]; then
		# What the lifted cap lets through, for the record.
		if echo 100 >"$CDEV/cur_state"; then
			ktap_diag "with max_idle 0: cur_state <- 100 taken, cur_state reads $(cat "$CDEV/cur_state")"
		fi
		set_target 0
		echo "$before" >"$PARAMS/max_idle"
	fi
	expect "max_idle after the refused write" "$(cat "$PARAMS/max_idle")" "$before"
}

# A raised target takes effect within one period of it or 100 ms,
# whichever is longer. As 7.3 and 6.12 ship, a new target only changes the
# durations, and the cycle already armed runs out first: at target 1 with
# 24 ms idle periods that cycle is 2.4 s long, so a step from 1 to 49 came
# up to 2.4 s late (trees/<tree>'s retarget patch). Judged by the
# scheduler: each CPU's first switch to its injecting thread after a trace
# marker written just before the new target. The write comes 0.2 s and
# 1.2 s into a cycle at target 1 (a start from 0 begins one at once).
check_mainline_retarget() {
	local t=/sys/kernel/tracing ev=/sys/kernel/tracing/events/sched/sched_switch
	local into lat
	[ -d "$ev" ] || { fail "retarget: no sched_switch trace event"; return; }
	start_loads
	for into in 0.2 1.2; do
		set_target 1
		sleep "$into"
		echo global >"$t/trace_clock"
		echo >"$t/trace"
		echo "next_comm ~ \"$THREAD_COMM/*\"" >"$ev/filter"
		echo 1 >"$ev/enable"
		echo pc-retarget >"$t/trace_marker"
		set_target 49
		sleep 3 # longer than the longest cycle at target 1
		echo 0 >"$ev/enable"
		echo 0 >"$ev/filter"
		# the slowest CPU's delay in ms, -1 if a CPU never injected
		lat=$(awk -v n="$NCPU" '
			{ ts = -1; cpu = -1
			  for (i = 1; i <= NF; i++) {
				if ($i ~ /^\[[0-9]+\]$/ && cpu < 0) cpu = substr($i, 2, length($i) - 2) + 0
				if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i + 0; break }
			  } }
			/: pc-retarget$/ { m = ts; next }
			m && / sched_switch: / && !(cpu in first) { first[cpu] = ts - m; c++ }
			END {
				if (c < n) { print -1; exit }
				for (k in first) if (first[k] > max) max = first[k]
				printf "%.0f\n", max * 1000
			}' "$t/trace")
		echo >"$t/trace"
		ktap_diag "retarget: 1 -> 49 written ${into} s into a cycle, took effect on every CPU after $lat ms"
		between "retarget: 1 -> 49, ${into} s into a cycle, takes effect within 100 ms (ms)" \
			"$lat" 0 100
		set_target 0
	done
	stop_loads
}

# An idle period that is not a whole number of jiffies ends between two
# ticks. The tick that follows charges that whole jiffy to the loads,
# while NO_HZ idle time has counted its idle part already, so /proc/stat
# counts more than wall time and shows the loads less CPU lost than they
# lost. The series starts cycles on a tick, which helps only whole-jiffy
# durations; `duration` takes 6 to 25 ms (at HZ=250, 10 ms is 2.5 jiffies).
# Judged at 25 and 40 % by /proc/stat's ticks against wall time and its
# idle against the work the loads lost, as mainline_accuracy judges 24 ms.
# The defect over-counts (104.6-108.0 % before the whole-jiffy patch); in
# one full boot of five the ticks read 94.9 and 97.6 %, an under-count it
# cannot cause (not understood), so the band is 93 to 103.
TICKS_DURATION_MIN=${TICKS_DURATION_MIN:-93}
TICKS_DURATION_MAX=${TICKS_DURATION_MAX:-103}
check_mainline_duration() {
	local target idle lost ticks base_lost clamp_lost before
	before=$(cat "$PARAMS/duration")
	echo 10 >"$PARAMS/duration" || { fail "duration <- 10 refused"; return; }
	start_loads
	sleep 1
	unclamped_window 10
	base_lost=$BASE_LOST
	for target in 25 40; do
		set_target "$target"
		sleep 3
		read -r idle lost ticks _ < <(measure_window 10)
		clamp_lost=$(difference "$lost" "$base_lost")
		ktap_diag "duration 10 ms ($(cat "$PARAMS/duration") read back), target $target: work lost to the clamp $clamp_lost%, /proc/stat idle $idle%, ticks $ticks% of wall"
		between "duration 10, target $target: /proc/stat ticks (% of wall)" "$ticks" \
			"$TICKS_DURATION_MIN" "$TICKS_DURATION_MAX"
		within "duration 10, target $target: /proc/stat idle vs the work lost to the clamp" \
			"$idle" "$clamp_lost" "$TOL_IDLE_VS_LOST"
	done
	set_target 0
	stop_loads
	echo "$before" >"$PARAMS/duration"
}

# The highest target the in-tree driver takes with every CPU clamped:
# max_idle up to 75 (MAX_ALL_CPU_IDLE), so 74. As 7.3 and 6.12 ship, a
# target held constant never used the compensation it learnt, and a window
# read above target plus guard (one late idle period is enough at ~31 ms
# cycles) skipped the next two cycles: package C6 61-71 % under full load
# (trees/<tree>'s skip patch). Judged by turbostat's package C6
# under full load against the target, and by the scheduler on an idle
# guest: skipping still stops injection where the package idles anyway.
# Package C6 may lie this far from 74 (points, over 10 s): the in-tree
# driver runs open loop at a constant target (it applies what it learnt
# only once both neighbouring targets have learnt too), 1-2 points short
# on this package; the skipping defect left it 5-12 short.
TOL_HIGH_PC6=${TOL_HIGH_PC6:-3}
# Injection periods CPU 0 may start in 3 s of an idle guest at 74: under
# a quarter of the ~92 it starts without skipping. The guest's own work
# (this script, the trace) interrupts skipping now and then, and each
# interruption costs two windows of two periods; measured 6-13.
HIGH_IDLE_PERIODS_MAX=${HIGH_IDLE_PERIODS_MAX:-20}

# high_periods S: print "N LINE": the injection periods CPU 0 started in
# S seconds (sched_switch to its injecting thread), and a diagnostic line
# of the gaps between them and the lengths of its idle periods.
high_periods() {
	local t=/sys/kernel/tracing ev=/sys/kernel/tracing/events/sched/sched_switch
	echo global >"$t/trace_clock"
	echo >"$t/trace"
	echo 1 >"$ev/enable"
	sleep "$1"
	echo 0 >"$ev/enable"
	awk -v comm="$THREAD_COMM" '
		{ ts = -1; cpu = -1
		  for (i = 1; i <= NF; i++) {
			if ($i ~ /^\[[0-9]+\]$/ && cpu < 0) cpu = substr($i, 2, length($i) - 2) + 0
			if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i + 0; break }
		  } }
		cpu != 0 || !/ sched_switch: / { next }
		index($0, "next_comm=" comm "/") { if (on) gap[int((ts - on) * 250)]++; on = ts; n++ }
		index($0, "prev_comm=" comm "/") && on { len[int((ts - on) * 500)]++ }
		END {
			printf "%d gaps (4 ms bins):", n
			for (k in gap) printf " %d:%d", k * 4, gap[k]
			printf "; idle lengths (2 ms bins):"
			for (k in len) printf " %d:%d", k * 2, len[k]
			print ""
		}' "$t/trace"
	echo >"$t/trace"
}

check_mainline_high() {
	local before pc6 lost idle base_lost tpid n line
	before=$(cat "$PARAMS/max_idle")
	echo 75 >"$PARAMS/max_idle" || { fail "max_idle <- 75 refused"; return; }
	start_loads
	sleep 1
	unclamped_window 5
	base_lost=$BASE_LOST
	set_target 74
	ktap_diag "high: cur_state reads $(cat "$CDEV/cur_state") after a write of 74"
	sleep 3 # the first windows, which learn the compensation
	turbostat_pc6 10 >/tmp/pc6 &
	tpid=$!
	read -r idle lost _ < <(measure_window 10)
	wait "$tpid" || true
	pc6=$(cat /tmp/pc6)
	ktap_diag "high: 74, 10 s: package C6 ${pc6:-?}%, work lost $(difference "$lost" "$base_lost")%, /proc/stat idle $idle%"
	[ -r "$DEBUG_DIR/powerclamp_calib" ] &&
		ktap_diag "high: calibration (pct:confidence/steady/dynamic) $(awk '$1 >= 73 && $1 <= 75 { printf "%s:%s/%s/%s ", $1, $2, $3, $4 }' "$DEBUG_DIR/powerclamp_calib")"
	read -r n line < <(high_periods 3)
	ktap_diag "high: loaded, CPU 0: $n periods in 3 s, $line"
	within "high: package C6 at 74 with every CPU clamped, full load (%)" "${pc6:-0}" 74 "$TOL_HIGH_PC6"
	stop_loads
	sleep 3 # windows that see the package idle
	read -r n line < <(high_periods 3)
	ktap_diag "high: idle guest, CPU 0: $n periods in 3 s, $line"
	between "high: idle guest at 74: injection periods CPU 0 starts in 3 s (skipping)" \
		"$n" 0 "$HIGH_IDLE_PERIODS_MAX"
	set_target 0
	echo "$before" >"$PARAMS/max_idle"
}
