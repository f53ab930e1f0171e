#!/bin/bash
# Guest side of scripts/benchmark.sh, run by the test init (pc.mode=bench).
# One counting load (pc-spin) per vCPU; for each method and target: release
# the throttle for a second, step to the target, sample /proc/stat every
# 200 ms through the settling and steady windows, and print one BENCH-RESULT
# line. BENCH-MARK lines bracket each steady window so that the host can
# read QEMU's own CPU time at the same moments.
#
# Methods (pc.methods=, comma separated):
#   none         unthrottled: the throughput every other figure is relative to
#   powerclamp   the cooling device intel_powerclamp (ours, or the stock
#                kernel's module from /lib/modules/$(uname -r)/extra)
#   cpumax       cgroup v2 cpu.max on the loads' cgroup, quota (100-T)% of
#                all CPUs
#   offline      round(T * N / 100) CPUs offline (never CPU 0)
#   idlecost     LOC interrupts per second of an idle guest, module not
#                loaded versus loaded with target 0
set -u

NCPU=$(nproc --all)
METHODS=${PC_METHODS:-none,powerclamp,cpumax,offline,idlecost}
TARGETS=${PC_TARGETS:-5 10 15 20 25 30 35 40 45 49}
SETTLE_S=${PC_SETTLE_S:-3}   # sampled from the step on, not in the figures
STEADY_S=${PC_STEADY_S:-5}   # the window the figures are taken over
MODULE=intel_powerclamp
CGROUP=/sys/fs/cgroup/bench
TRACE=/sys/kernel/tracing
SAMPLES=/tmp/samples
COUNTERS=()
LOADS=()
CDEV=""
BASE_RATE=""
BASE_SHARE=""

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

# The loads' CPU time in ns (the first field of /proc/PID/schedstat): what
# the guest says they got, against work_units, what they did with it.
load_runtime() {
	local pid ns sum=0
	for pid in "${LOADS[@]}"; do
		read -r ns _ <"/proc/$pid/schedstat"
		sum=$((sum + ns))
	done
	echo "$sum"
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

# The injecting threads' sched_switch events, for the synchronisation share.
trace_start() {
	local ev=$TRACE/events/sched/sched_switch
	[ -d "$ev" ] || return 0
	echo global >"$TRACE/trace_clock"
	echo 'prev_comm ~ "kidle_inj*" || next_comm ~ "kidle_inj*"' >"$ev/filter"
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
				if ($i ~ /^next_comm=/) nxt = ($i ~ /^next_comm=kidle_inj/)
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

# sample_until END_US: append "time idle_ticks total_ticks" every 200 ms
# until END_US (microseconds since the epoch). Shell builtins only: a fork
# costs tens of ms in a TCG guest and would take CPU from the loads.
sample_until() {
	local now _ u ni s i w q sq st
	while :; do
		now=$EPOCHREALTIME
		read -r _ u ni s i w q sq st _ </proc/stat
		echo "$now $((i + w)) $((u + ni + s + i + w + q + sq + st))" >>"$SAMPLES"
		((${now/./} < $1)) || break
		read -r -t 0.2 -u "$NEVER_FD"
	done
}

# run_target METHOD TARGET: one step 0 -> TARGET and its figures
run_target() {
	local method=$1 target=$2 t0 steady end w0 w1 r0 r1 sync=-1 k=0
	apply "$method" 0
	sleep 1
	: >"$SAMPLES"
	t0=$EPOCHREALTIME
	apply "$method" "$target"
	steady=$((${t0/./} + SETTLE_S * 1000000))
	sample_until "$steady"
	[ "$method" = powerclamp ] && trace_start
	w0=$(work_units)
	r0=$(load_runtime)
	echo "BENCH-MARK begin $method $target"
	end=$((steady + STEADY_S * 1000000))
	sample_until "$end"
	echo "BENCH-MARK end $method $target"
	r1=$(load_runtime)
	w1=$(work_units)
	if [ "$method" = powerclamp ]; then trace_stop; sync=$(sync_share); fi
	[ "$method" = offline ] && k=$(offline_count "$target")
	apply "$method" 0
	# Figures over the steady window; settling from the 200 ms samples.
	awk -v n="$NCPU" -v t0="$t0" -v steady_us="$steady" -v k="$k" \
	    -v work="$((w1 - w0))" -v base="$BASE_RATE" \
	    -v runtime="$((r1 - r0))" -v base_share="$BASE_SHARE" \
	    -v method="$method" -v target="$target" -v sync="$sync" '
		# idle shown in a span, in percent of all CPUs; offline CPUs count
		# as idle (their /proc/stat columns stand still)
		function idle(i, j) {
			return 100 * (id[j] - id[i] + k * (t[j] - t[i]) * 100) / (n * (t[j] - t[i]) * 100)
		}
		{ t[m] = $1; id[m] = $2; tot[m] = $3; if (!s && $1 >= steady_us / 1e6) s = m; m++ }
		END {
			e = m - 1
			secs = t[e] - t[s]
			shown = idle(s, e)
			ticks = 100 * (tot[e] - tot[s]) / ((n - k) * secs * 100)
			rate = work / secs
			lost = base > 0 ? 100 * (1 - rate / base) : 0
			share = 100 * runtime / 1e9 / (n * secs)
			cpulost = base_share > 0 ? 100 * (1 - share / base_share) : 0
			# settled: from the first 1 s span (5 samples) on whose idle
			# stays within 1 point of the steady value
			settle = -1
			for (i = e - 5; i >= 0; i--) {
				v = idle(i, i + 5) - shown
				if (v > 1 || v < -1) break
				settle = t[i + 5] - t0
			}
			printf "BENCH-RESULT method=%s target=%d idle=%.2f lost=%.2f cpulost=%.2f ticks=%.1f settle=%.2f sync=%s rate=%.0f share=%.2f secs=%.2f\n",
				method, target, shown, lost, cpulost, ticks, settle, sync, rate, share, secs
		}' "$SAMPLES" | tee -a /tmp/results
}

# baseline FIELD: FIELD of the unthrottled run's result
baseline() {
	awk -v f="$1=" '/^BENCH-RESULT method=none / {
		for (i = 2; i <= NF; i++) if (index($i, f) == 1) v = substr($i, length(f) + 1) }
		END { print v }' /tmp/results
}

run_method() {
	local method=$1 target
	case "$method" in
	none)
		run_target none 0
		BASE_RATE=$(baseline rate)
		BASE_SHARE=$(baseline share)
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
