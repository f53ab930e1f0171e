#!/bin/bash
# Guest side of scripts/benchmark.sh, run by the test init (pc.mode=bench).
# One counting load (pc-spin) per vCPU; for each method and target: release
# the throttle for a second, an unclamped window, step to the target,
# sample /proc/stat through the settling time on whole periods, read the
# loads and the package at both ends of the steady window, and print one
# BENCH-RESULT line. BENCH-MARK lines bracket each steady window so that the host can
# read QEMU's own CPU time at the same moments.
#
# Every clamped step is measured against an unclamped window of its own,
# taken right before it (A/B): the host's share of CPU drifts by several
# percent within minutes, and a single baseline at the start turned that
# drift into lost work.
#
# On the emulated package (emulator/, docs/emulator.md) each window also
# reads package C6 residency (MSR_PKG_C6_RESIDENCY through /dev/cpu/0/msr
# against wall time at the TSC rate), package energy (intel_rapl's
# package-0 energy_uj) and, at the end of each step, the package
# temperature (the x86_pkg_temp zone). Where they are missing (Debian's
# QEMU) they read -1.
#
# Methods (pc.methods=, comma separated):
#   none         unthrottled, once: the guest's busy figures (each clamped
#                step has its own unclamped window besides)
#   powerclamp   the cooling device intel_powerclamp (ours, or the stock
#                kernel's module from /lib/modules/$(uname -r)/extra)
#   cpumax       cgroup v2 cpu.max on the loads' cgroup, quota (100-T)% of
#                all CPUs
#   offline      round(T * N / 100) CPUs offline (never CPU 0)
#   idlecost     LOC interrupts per second of an idle guest, module not
#                loaded versus loaded with target 0
#   timeline-powerclamp, timeline-cpumax
#                one step to the first target, and after the settling
#                time TIMELINE_S seconds of trace events (the CPUs' tasks,
#                idle states and interrupts) printed between BENCH-TIMELINE
#                lines, one "TL" line per event, for the host's picture
set -u

NCPU=$(nproc --all)
METHODS=${PC_METHODS:-none,powerclamp,cpumax,offline,idlecost}
TARGETS=${PC_TARGETS:-5 10 15 20 25 30 35 40 45 49}
SETTLE_S=${PC_SETTLE_S:-3}   # sampled from the step on, not in the figures
STEADY_S=${PC_STEADY_S:-5}   # the window the figures are taken over
SYNC_S=${PC_SYNC_S:-2}       # traced after it, for the synchronisation
MODULE=intel_powerclamp
CGROUP=/sys/fs/cgroup/bench
TRACE=/sys/kernel/tracing
SAMPLES=/tmp/samples
STATS=/sys/kernel/debug/$MODULE/stats	# this driver's, not the stock one's
SAMPLE_US=0       # when the last sample was taken
COUNTERS=()
LOADS=()
CDEV=""
MSR_PKG_C6=$((0x3f9))
RAPL=""           # package-0 energy_uj, when intel_rapl bound
RAPL_RANGE=0      # where energy_uj wraps
PKG_TEMP=""       # the x86_pkg_temp zone's temp, when it bound
TSC_HZ=0          # the rate MSR_PKG_C6_RESIDENCY counts at
TIMELINE_S=${PC_TIMELINE_S:-1.5}  # traced; the host draws the last second

log() { echo "# bench: $*"; }

cdev_dir() {
	local d
	for d in /sys/class/thermal/cooling_device*; do
		[ "$(cat "$d/type" 2>/dev/null)" = "$MODULE" ] && { echo "$d"; return; }
	done
}

load_module() {
	modprobe "$MODULE" 2>/dev/null ||
		insmod "/lib/modules/$(uname -r)/extra/$MODULE.ko" || return 1
	CDEV=$(cdev_dir)
	[ -n "$CDEV" ]
}

unload_module() { rmmod "$MODULE" 2>/dev/null; CDEV=""; }

start_loads() {
	local cpu
	mkdir -p "$CGROUP"
	echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		taskset -c "$cpu" pc-spin "/run/spin.$cpu" &
		LOADS+=($!)
		COUNTERS+=("/run/spin.$cpu")
		echo "$!" >"$CGROUP/cgroup.procs"
	done
	sleep 1
}

# One load per CPU, pinned like the test suite's: unpinned loads migrate
# around the injected periods and lose time to the imbalance.
pin_loads() {
	local cpu
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		taskset -pc "$cpu" "${LOADS[cpu]}" >/dev/null
	done
}

stop_loads() {
	((${#LOADS[@]})) && kill "${LOADS[@]}" 2>/dev/null
	wait 2>/dev/null
	LOADS=()
}

work_units() { pc-spin -r "${COUNTERS[@]}"; }

# Each reading below carries the moment it was taken, and each rate is
# taken over its own readings' moments. Rates over the 200 ms samples'
# span overstated the loads' lost CPU by 2 to 4 points: the readings came
# a fork or two after the first sample and, in the clamped steps, after
# trace_start too, so the CPU time covered less than the span it was
# divided by.

# work_sample: "us units", the loads' counted work and the middle of the
# fork that read it (microseconds since the epoch)
work_sample() {
	local a b units
	a=${EPOCHREALTIME/./}
	units=$(work_units)
	b=${EPOCHREALTIME/./}
	echo "$(((a + b) / 2)) $units"
}

# load_runtime: "us ns", the loads' CPU time (the first field of
# /proc/PID/schedstat: what the guest says they got, against work_units,
# what they did with it) and when it was read. Builtins only.
load_runtime() {
	local pid ns sum=0 at=${EPOCHREALTIME/./}
	for pid in "${LOADS[@]}"; do
		read -r ns _ <"/proc/$pid/schedstat"
		sum=$((sum + ns))
	done
	echo "$at $sum"
}

# pkg_setup: find the package's readers, if there is a package to read
pkg_setup() {
	local z mhz
	for z in /sys/class/powercap/intel-rapl:*; do
		[ "$(cat "$z/name" 2>/dev/null)" = package-0 ] || continue
		RAPL=$z/energy_uj
		RAPL_RANGE=$(cat "$z/max_energy_range_uj")
		break
	done
	for z in /sys/class/thermal/thermal_zone*; do
		[ "$(cat "$z/type" 2>/dev/null)" = x86_pkg_temp ] && PKG_TEMP=$z/temp && break
	done
	mhz=$(dmesg | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p
		s/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -n 1)
	TSC_HZ=$(awk -v m="${mhz:-0}" 'BEGIN { printf "%.0f", m * 1e6 }')
	log "package: energy ${RAPL:-none}, temperature ${PKG_TEMP:-none}, TSC $TSC_HZ Hz"
}

# pkg_snapshot: "wall_us pkg_c6_ticks energy_uj", -1 for what is missing
pkg_snapshot() {
	local c6=-1 e=-1
	if [ -c /dev/cpu/0/msr ]; then
		c6=$(dd if=/dev/cpu/0/msr bs=8 count=1 skip="$MSR_PKG_C6" \
			iflag=skip_bytes status=none 2>/dev/null | od -An -tu8 | tr -d ' ')
	fi
	[ -n "$RAPL" ] && read -r e <"$RAPL"
	echo "${EPOCHREALTIME/./} ${c6:--1} $e"
}

# pkg_temp: the package temperature in degrees C, -1 without a sensor
pkg_temp() {
	local t=-1000
	[ -n "$PKG_TEMP" ] && read -r t <"$PKG_TEMP"
	echo $((t / 1000))
}

# window SECONDS: the loads' work and CPU time and the package's counters
# over SECONDS, as "work work_us runtime_ns runtime_us pkg_us pkg_c6_ticks
# energy_uj", each with the time between its own two readings
window() {
	local w0 w1 r0 r1 s0 s1
	w0=$(work_sample) r0=$(load_runtime) s0=$(pkg_snapshot)
	read -r -t "$1" -u "$NEVER_FD"
	s1=$(pkg_snapshot) r1=$(load_runtime) w1=$(work_sample)
	awk -v a="$s0" -v b="$s1" -v w0="$w0" -v w1="$w1" -v r0="$r0" -v r1="$r1" \
	    -v range="$RAPL_RANGE" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		split(w0, p, " "); split(w1, q, " "); split(r0, u, " "); split(r1, v, " ")
		uj = x[3] < 0 ? -1 : (y[3] >= x[3] ? y[3] - x[3] : y[3] + range - x[3])
		print q[2] - p[2], q[1] - p[1], v[2] - u[2], v[1] - u[1], y[1] - x[1],
			(x[2] < 0 ? -1 : y[2] - x[2]), uj
	}'
}

set_online() { echo "$2" >"/sys/devices/system/cpu/cpu$1/online"; }

offline_count() { echo $(((${1} * NCPU + 50) / 100)); }

# apply METHOD TARGET: throttle the loads to TARGET percent idle (0: release)
apply() {
	local cpu k
	case "$1" in
	none) ;;
	powerclamp) echo "$2" >"$CDEV/cur_state" ;;
	cpumax)
		if (($2 == 0)); then
			echo "max 100000" >"$CGROUP/cpu.max"
		else
			echo "$(((100 - $2) * NCPU * 1000)) 100000" >"$CGROUP/cpu.max"
		fi
		;;
	offline)
		k=$(offline_count "$2")
		for ((cpu = NCPU - 1; cpu >= 1; cpu--)); do
			if ((cpu >= NCPU - k)); then set_online "$cpu" 0; else set_online "$cpu" 1; fi
		done
		# the loads of offlined CPUs lost their pinning: restore it
		((k == 0)) && pin_loads
		;;
	esac
}

# The injecting threads' sched_switch events, for the synchronisation share:
# kidle_inject/N (this driver), kidle_inj/N (6.1's stock driver) and
# idle_inject/N (the in-tree driver on idle_inject, 6.3 on).
trace_start() {
	local ev=$TRACE/events/sched/sched_switch
	[ -d "$ev" ] || return 0
	echo global >"$TRACE/trace_clock"
	echo 'prev_comm ~ "kidle_inj*" || next_comm ~ "kidle_inj*" || prev_comm ~ "idle_inject*" || next_comm ~ "idle_inject*"' >"$ev/filter"
	echo >"$TRACE/trace"
	echo 1 >"$ev/enable"
}

trace_stop() {
	[ -d "$TRACE/events/sched/sched_switch" ] || return 0
	echo 0 >"$TRACE/events/sched/sched_switch/enable"
}

# Share of the injecting threads' on-CPU time during which every CPU was
# in an injecting thread at once, in percent (-1 without trace events).
sync_share() {
	[ -d "$TRACE/events/sched/sched_switch" ] || { echo -1; return; }
	awk -v n="$NCPU" '
		/ sched_switch: / {
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^\[[0-9]+\]$/) cpu = substr($i, 2, length($i) - 2) + 0
				if ($i ~ /^[0-9]+\.[0-9]+:$/) ts = $i + 0
				if ($i ~ /^next_comm=/) nxt = ($i ~ /^next_comm=k?idle_inj/)
			}
			print ts, cpu, nxt
		}' "$TRACE/trace" | sort -n -k1,1 | awk -v n="$NCPU" '
		{ if (started) { dt = $1 - last; own += dt * inside; if (inside == n) all += dt * n }
		  started = 1; last = $1
		  if ($3 && !in_[$2]) { in_[$2] = 1; inside++ }
		  else if (!$3 && in_[$2]) { in_[$2] = 0; inside-- } }
		END { printf "%.1f\n", (own > 0 ? 100 * all / own : -1) }'
	echo >"$TRACE/trace"
}

# sample: append "time idle_ticks total_ticks windows" to SAMPLES, windows
# being the control windows this driver has closed (-1 without its
# debugfs stats). Shell builtins only: a fork costs tens of ms in a TCG
# guest and would take CPU from the loads.
sample() {
	local now _ u ni s i w q sq st key value windows=-1
	now=$EPOCHREALTIME
	read -r _ u ni s i w q sq st _ </proc/stat
	if [ -r "$STATS" ]; then
		while read -r key value; do
			[ "$key" = windows: ] && { windows=$value; break; }
		done <"$STATS"
	fi
	echo "$now $((i + w)) $((u + ni + s + i + w + q + sq + st)) $windows" >>"$SAMPLES"
	SAMPLE_US=${now/./}
}

# sleep_until END_US: until END_US (microseconds since the epoch)
sleep_until() {
	local left=$(($1 - ${EPOCHREALTIME/./})) frac
	((left > 0)) || return 0
	printf -v frac '%06d' $((left % 1000000))
	read -r -t "$((left / 1000000)).$frac" -u "$NEVER_FD"
}

# sample_until END_US STEP_US: a sample every STEP_US until one taken at
# or after END_US
sample_until() {
	local next=${EPOCHREALTIME/./}
	while :; do
		sample
		((SAMPLE_US < $1)) || break
		next=$((next + $2))
		sleep_until "$next"
	done
}

# sample_step METHOD TARGET: microseconds between the settling samples, a
# whole number of the method's periods and at least 200 ms, so that any
# span of samples holds whole periods whatever their phase: duration *
# 100 / target for the drivers (both plan their interval so), cpu.max's
# 100 ms, 200 ms otherwise
sample_step() {
	local period=0 d
	case "$1" in
	powerclamp)
		read -r d 2>/dev/null <"/sys/module/$MODULE/parameters/duration" &&
			period=$((d * 100000 / $2))
		;;
	cpumax) period=100000 ;;
	esac
	((period > 0)) || { echo 200000; return; }
	echo $(((200000 + period - 1) / period * period))
}

# run_target METHOD TARGET: an unclamped window, then one step 0 -> TARGET,
# and the step's figures against that window. The steady window runs
# nothing beside the loads but the readings at its ends: samples every
# 200 ms and the sched_switch trace cost the loads 0.5 and 1 point of CPU
# in it; settling is sampled before it, the synchronisation traced after.
run_target() {
	local method=$1 target=$2 t0 steady end w0 w1 r0 r1 s0 s1 base step
	local sync=-1 k=0 temp
	apply "$method" 0
	sleep 1
	base="0 0 0 0 0 -1 -1"
	[ "$method" = none ] || base=$(window "$STEADY_S")
	: >"$SAMPLES"
	step=$(sample_step "$method" "$target")
	t0=$EPOCHREALTIME
	apply "$method" "$target"
	steady=$((${t0/./} + SETTLE_S * 1000000))
	sample_until "$steady" "$step"
	w0=$(work_sample)
	r0=$(load_runtime)
	s0=$(pkg_snapshot)
	echo "BENCH-MARK begin $method $target"
	end=$((steady + STEADY_S * 1000000))
	sleep_until "$end"
	sample
	echo "BENCH-MARK end $method $target"
	s1=$(pkg_snapshot)
	r1=$(load_runtime)
	w1=$(work_sample)
	temp=$(pkg_temp)
	if [ "$method" = powerclamp ]; then
		trace_start
		read -r -t "$SYNC_S" -u "$NEVER_FD"
		trace_stop
		sync=$(sync_share)
	fi
	[ "$method" = offline ] && k=$(offline_count "$target")
	apply "$method" 0
	# Figures over the steady window, its first sample the last of the
	# settling ones; settling from those.
	awk -v n="$NCPU" -v t0="$t0" -v steady_us="$steady" -v k="$k" \
	    -v w0="$w0" -v w1="$w1" -v r0="$r0" -v r1="$r1" -v base="$base" \
	    -v s0="$s0" -v s1="$s1" -v tsc_hz="$TSC_HZ" -v range="$RAPL_RANGE" \
	    -v method="$method" -v target="$target" -v sync="$sync" -v temp="$temp" \
	    -v step="$step" '
		# idle shown in a span, in percent of all CPUs; offline CPUs count
		# as idle (their /proc/stat columns stand still)
		function idle(i, j) {
			return 100 * (id[j] - id[i] + k * (t[j] - t[i]) * 100) / (n * (t[j] - t[i]) * 100)
		}
		# the package over a window of us microseconds: C6 residency in
		# percent and power in W (-1 where there is no counter)
		function pc6(ticks, us) { return ticks < 0 || tsc_hz <= 0 ? -1 : 100 * ticks / (us / 1e6 * tsc_hz) }
		function energy(a, b) { return a < 0 ? -1 : (b >= a ? b - a : b + range - a) }
		BEGIN { m = 0 }
		{ t[m] = $1; id[m] = $2; tot[m] = $3; win[m] = $4; if (s == "" && $1 >= steady_us / 1e6) s = m; m++ }
		END {
			e = m - 1
			secs = t[e] - t[s]
			shown = idle(s, e)
			ticks = 100 * (tot[e] - tot[s]) / ((n - k) * secs * 100)
			split(w0, wa, " "); split(w1, wb, " "); split(r0, ra, " "); split(r1, rb, " ")
			work = wb[2] - wa[2]
			rate = work / ((wb[1] - wa[1]) / 1e6)
			share = 100 * (rb[2] - ra[2]) / 1e9 / (n * (rb[1] - ra[1]) / 1e6)
			# work work_us runtime_ns runtime_us pkg_us c6_ticks energy_uj
			split(base, b, " ")
			brate = b[2] > 0 ? b[1] / (b[2] / 1e6) : 0
			bshare = b[4] > 0 ? 100 * b[3] / 1e9 / (n * b[4] / 1e6) : 0
			bwatts = b[5] > 0 && b[7] >= 0 ? b[7] / b[5] : -1
			lost = brate > 0 ? 100 * (1 - rate / brate) : 0
			# in points of the CPUs wall time, as the idle shown: a ratio
			# to the unclamped share inflated it by target x h / (100 - h)
			# where h is the share the loads never get (1 to 3 %)
			cpulost = bshare > 0 ? bshare - share : 0
			split(s0, x, " "); split(s1, y, " ")
			us = y[1] - x[1]
			c6 = pc6(x[2] < 0 ? -1 : y[2] - x[2], us)
			uj = x[3] < 0 ? -1 : energy(x[3], y[3])
			w = uj < 0 ? -1 : uj / us
			ujpu = w > 0 && rate > 0 ? w * 1e6 / rate : -1	# W over units/s
			# performance per watt against the unclamped window before,
			# performance being the CPU time the loads got: their counted
			# work per CPU second moves with the load on the host under TCG
			ppw = w > 0 && bwatts > 0 && bshare > 0 ? (share / w) / (bshare / bwatts) : -1
			# settled: from the first settling sample on which every later
			# span of at least 1 s (whole periods: sample_step) up to the
			# steady window stays within 1 point of the steady value; -1
			# if none does by then. Also counted in control windows: those
			# this driver closed from the step to that sample.
			span = int((1e6 + step - 1) / step)
			settle = -1; settlewin = -1
			for (i = s - span; i >= 0; i--) {
				v = idle(i, i + span) - shown
				if (v > 1 || v < -1) break
				settle = t[i] - t0
				settlewin = win[0] < 0 ? -1 : win[i] - win[0]
			}
			printf "BENCH-RESULT method=%s target=%d idle=%.2f lost=%.2f cpulost=%.2f ticks=%.1f settle=%.2f sync=%s rate=%.0f share=%.2f secs=%.2f baserate=%.0f pc6=%.2f watts=%.3f basewatts=%.3f ujpu=%.4f ppw=%.3f temp=%d baseshare=%.2f step=%.3f settlewin=%d\n",
				method, target, shown, lost, cpulost, ticks, settle, sync, rate, share, secs,
				brate, c6, w, bwatts, ujpu, ppw, temp, bshare, step / 1e6, settlewin
		}' "$SAMPLES" | tee -a /tmp/results
}

# The events of the timeline: which task each CPU runs, when it enters and
# leaves an idle state, and the interrupts that wake it.
TIMELINE_EVENTS="sched/sched_switch power/cpu_idle irq_vectors/local_timer_entry
	irq_vectors/reschedule_entry irq_vectors/call_function_single_entry
	irq_vectors/call_function_entry irq/irq_handler_entry"

# timeline_events: the trace as "TL SECONDS CPU KIND ARG" lines: KIND sw
# (ARG the task switched to: load, inject, idle or other), idle (ARG 1 on
# entry, 0 on exit) or irq (ARG its name). A line without a CPU and a
# timestamp (a lost-events notice) is skipped, not read with the last
# line's fields.
timeline_events() {
	awk '
		/^#/ { next }
		{
			cpu = -1; ev = ""; nxt = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^\[[0-9]+\]$/) cpu = substr($i, 2, length($i) - 2) + 0
				if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i + 0; ev = $(i + 1); f = i + 2; break }
			}
			if (cpu < 0 || ev == "") next
			sub(":$", "", ev)
			if (ev == "sched_switch") {
				for (; f <= NF; f++) if ($f ~ /^next_comm=/) nxt = substr($f, 11)
				kind = "other"
				if (nxt ~ /^pc-spin/) kind = "load"
				else if (nxt ~ /^kidle_inj/) kind = "inject"
				else if (nxt ~ /^swapper/) kind = "idle"
				printf "TL %.6f %d sw %s\n", ts, cpu, kind
			} else if (ev == "cpu_idle") {
				# state=4294967295 (PWR_EVENT_EXIT) leaves the idle state
				printf "TL %.6f %d idle %d\n", ts, cpu, ($f !~ /^state=4294967295/)
			} else {
				name = ev; sub("_entry$", "", name)
				if (ev == "irq_handler_entry")
					for (; f <= NF; f++) if ($f ~ /^name=/) name = substr($f, 6)
				printf "TL %.6f %d irq %s\n", ts, cpu, name
			}
		}' "$TRACE/trace"
}

# run_timeline METHOD: the first target of TARGETS, traced for TIMELINE_S
run_timeline() {
	local method=$1 target=${TARGETS%% *} ev
	[ "$method" = powerclamp ] && { load_module || { log "cannot load $MODULE"; return 1; }; }
	apply "$method" "$target"
	read -r -t "$SETTLE_S" -u "$NEVER_FD"
	echo global >"$TRACE/trace_clock"
	echo 8192 >"$TRACE/buffer_size_kb"
	echo >"$TRACE/trace"
	for ev in $TIMELINE_EVENTS; do
		[ -d "$TRACE/events/$ev" ] || continue
		echo 0 >"$TRACE/events/$ev/filter"
		echo 1 >"$TRACE/events/$ev/enable"
	done
	read -r -t "$TIMELINE_S" -u "$NEVER_FD"
	for ev in $TIMELINE_EVENTS; do
		[ -d "$TRACE/events/$ev" ] && echo 0 >"$TRACE/events/$ev/enable"
	done
	# printed before the module goes: unloading a module whose events
	# were on empties the trace
	echo "BENCH-TIMELINE begin $method $target $NCPU"
	timeline_events
	echo "BENCH-TIMELINE end $method $target"
	echo >"$TRACE/trace"
	apply "$method" 0
	[ "$method" = powerclamp ] && unload_module
	return 0
}

run_method() {
	local method=$1 target
	case "$method" in
	none)
		run_target none 0
		return
		;;
	timeline-*)
		run_timeline "${method#timeline-}"
		return
		;;
	powerclamp) load_module || { log "cannot load $MODULE"; return 1; } ;;
	esac
	for target in $TARGETS; do
		run_target "$method" "$target"
	done
	[ "$method" = powerclamp ] && unload_module
	return 0
}

# loc_rate: LOC (local timer) interrupts per second over 10 s, all CPUs
loc_rate() {
	local a b
	a=$(awk '$1 == "LOC:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)
	sleep 10
	b=$(awk '$1 == "LOC:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)
	awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 10 }'
}

idle_cost() {
	local off on
	unload_module
	sleep 2
	off=$(loc_rate)
	load_module || { log "cannot load $MODULE"; return 1; }
	echo 0 >"$CDEV/cur_state"
	sleep 2
	on=$(loc_rate)
	unload_module
	echo "BENCH-IDLECOST unloaded=$off loaded=$on"
}

main() {
	local method rc=0
	# a pipe with a writer that never writes: "read -t" on it is a sleep
	exec {NEVER_FD}<> <(:)
	log "$(uname -r), $NCPU CPUs, methods $METHODS, targets $TARGETS"
	: >/tmp/results
	pkg_setup
	start_loads
	for method in ${METHODS//,/ }; do
		[ "$method" = idlecost ] && continue
		run_method "$method" || rc=1
	done
	stop_loads
	case ",$METHODS," in *,idlecost,*) idle_cost || rc=1 ;; esac
	echo "BENCH-DONE"
	return "$rc"
}

main
