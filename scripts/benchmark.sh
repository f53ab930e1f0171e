#!/usr/bin/env bash
# The benchmark: how well each throttle holds an idle target, in the same
# guest and the same run. Boots the patched kernel (built without the debug
# fragment) for this driver, cgroup cpu.max and CPU offlining, then Debian's
# stock 6.1 kernel with its own intel_powerclamp, each with one pc-spin load
# per vCPU; prints a table, writes a CSV and plots achieved against target.
# Not part of the test suite: it takes about 15 minutes under TCG.
#
# --package boots both kernels on the emulated Intel package (emulator/,
# docs/emulator.md), whose package C6 residency, RAPL energy and package
# temperature the guest then reads for every window: package C6, power,
# energy per work unit and performance per watt against the unclamped
# window before each step. The patched kernel runs on a CPU model without
# MWAIT, so that idle and offline CPUs halt (QEMU 7.2 makes MWAIT a pause
# with more than one vCPU); the stock driver refuses a CPU without MWAIT,
# so the stock kernel gets MWAIT in CPUID and idle=halt, which keeps its
# idle loop on HLT (it is not offlined, where it would MWAIT).
#
# --timeline boots the same two kernels for one step each to the first
# target (25 unless --targets says otherwise) with this driver, cpu.max and
# the stock driver, traces a second and a half of it and draws the last
# second per CPU (scripts/timeline.sh): timeline.png and timeline.txt.
#
# --trees "7.3 6.12" (with --package) also boots each mainline tree's
# kernel with its series (trees/, docs/trees.md), its in-tree
# intel_powerclamp on idle_inject judged the same way as the stock
# driver: same CPU model, idle=halt, methods none, powerclamp and
# idlecost; its rows carry the tree as their kernel. --high T adds target
# T (above 50) to the patched kernel's boot, with max_idle=85, and to each
# tree's, with max_idle=75, the most the in-tree driver takes with every
# CPU clamped (MAX_ALL_CPU_IDLE; it then runs a target of 75 as 74); the
# stock driver stops at 50.
#
# --repeat N runs the boots N times, each run in OUT/run-K, and prints
# every figure's mean and standard deviation over the runs per method and
# target beside the tables of all runs together: how far apart two runs
# of the same code land on this host.
#
# usage: scripts/benchmark.sh [--package] [--trees "7.3 6.12"] [--timeline] [--repeat N] [--smp N] [--targets "5 10 ..."] [--out DIR]
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --package --trees= --high= --timeline --repeat= --smp= --targets= --out= -- "$@" <<'EOF'
usage: scripts/benchmark.sh [--package] [--trees "7.3 6.12"] [--high T]
                            [--timeline] [--repeat N] [--smp N] [--targets "5 10 ..."]
                            [--out DIR]

The benchmark: how well this driver, cgroup cpu.max, CPU offlining and
Debian's stock 6.1 kernel with its own intel_powerclamp hold an idle
target in the same guest, one pc-spin load per vCPU. Prints a table,
writes results.csv and plots achieved against target into DIR. Not part
of the test suite: it takes minutes under TCG. Sets the machine up as
scripts/demo.sh does (root, apt, the cache and its lock).

  --package          boot both kernels on the emulated Intel package and
                     read package C6, RAPL energy and temperature for every
                     window (docs/emulator.md)
  --trees "7.3 6.12" with --package: also each mainline tree's kernel
                     with its series (trees/), its in-tree driver run
                     as the stock one is (docs/trees.md)
  --high T           also target T (51-85) on this driver (max_idle=85)
                     and the trees' (max_idle=75, their most with every
                     CPU clamped), not on the stock one
  --timeline         one step to the first target (25 unless --targets)
                     per method, traced and drawn per CPU (scripts/timeline.sh)
  --repeat N         run the boots N times, each into DIR/run-K, and print
                     every figure's mean and standard deviation
  --smp N            vCPUs of the guests (default 4)
  --targets "..."    the idle targets in % (default "5 10 15 20 25 30 35 40 45 49")
  --out DIR          where the logs and results go (default out/bench)

See docs/benchmark.md.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

SMP=4
TARGETS=""
OUT=$LOG_DIR/bench
PACKAGE=""
TREES=""
HIGH=""
TIMELINE=""
REPEAT=1
while (($#)); do
	case "$1" in
	--package) PACKAGE=1; shift ;;
	--trees) TREES=$2; shift 2 ;;
	--high) HIGH=$2; shift 2 ;;
	--timeline) TIMELINE=1; shift ;;
	--smp) SMP=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--targets) TARGETS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) die "unknown argument: $1" ;;
	esac
done
if [ -z "$TARGETS" ]; then
	TARGETS="5 10 15 20 25 30 35 40 45 49"
	[ -z "$TIMELINE" ] || TARGETS=25
fi
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a count of runs, got '$REPEAT'"
for tree in $TREES; do
	[ -d "$REPO_DIR/trees/$tree" ] || die "--trees: no tree '$tree' (trees/: 6.12, 7.3)"
done
[ -z "$TREES" ] || [ -n "$PACKAGE" ] ||
	die "--trees needs --package: the in-tree driver probes only with MWAIT and a package C-state MSR"
[ -z "$TREES" ] || [ -z "$TIMELINE" ] || die "--trees does not combine with --timeline"
if [ -n "$HIGH" ]; then
	if ! [[ $HIGH =~ ^[0-9]+$ ]] || ((HIGH <= 50 || HIGH > 85)); then
		die "--high wants a target above 50 and at most 85 (this driver's max_idle), got '$HIGH'"
	fi
	[ -z "$TIMELINE" ] || die "--high does not combine with --timeline"
fi
# the kernels of a run, as their console logs and CSV rows name them
read -r -a LABELS <<<"patched stock $TREES"
NAME=pc-bench-$$
CSV=$OUT/results.csv
# where the boots of the current run write their console logs and marks
RUN_DIR=$OUT

# Stamp the guest's steady windows with QEMU's CPU time (utime + stime, in
# USER_HZ ticks) read the moment their markers come out of the serial port.
stamp_marks() {
	local label=$1 line pid="" cpu
	while IFS= read -r line; do
		line=${line%$'\r'}
		printf '%s\n' "$line"
		case "$line" in
		BENCH-MARK*)
			[ -n "$pid" ] || pid=$(pgrep -f "^[^ ]*qemu-system-x86_64 .* -name $NAME " | head -n 1) || true
			cpu=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || cpu=-1
			echo "$label $line $cpu" >>"$RUN_DIR/marks.txt"
			;;
		esac
	done
}

# boot LABEL METHODS APPEND [run-qemu.sh options]: one guest run of the
# benchmark, APPEND added to its command line; BOOT_TARGETS, when set,
# instead of TARGETS
boot() {
	local label=$1 methods=$2 append=$3 targets=${BOOT_TARGETS:-$TARGETS}
	shift 3
	stage "benchmark: $label kernel, methods $methods, $SMP vCPUs"
	"$REPO_DIR/run-qemu.sh" --mode bench --smp "$SMP" --name "$NAME" \
		--timeout 3600 --log "$RUN_DIR/console-$label.log" \
		--append "pc.methods=$methods pc.targets=${targets// /,} $append" "$@" |
		stamp_marks "$label" | grep --line-buffered -E '^(BENCH|# bench)'
	grep -q '^BENCH-DONE' "$RUN_DIR/console-$label.log" || die "$label run did not finish"
	# a method that could not run (a module parameter refused at load)
	# leaves its rows out of the table: stop here instead
	tr -d '\r' <"$RUN_DIR/console-$label.log" | grep -q '^pc-init: bench finished with status 0$' ||
		die "$label run failed: $(tr -d '\r' <"$RUN_DIR/console-$label.log" | grep -m1 '^# bench: cannot' || echo "see $RUN_DIR/console-$label.log")"
}

# run_dirs: the directories the runs wrote their logs and marks into
run_dirs() {
	local run
	if ((REPEAT == 1)); then
		echo "$OUT"
	else
		for ((run = 1; run <= REPEAT; run++)); do echo "$OUT/run-$run"; done
	fi
}

# One CSV row per method, target and run: the guest's figures, joined with
# the host CPU QEMU spent per million work units over the same window.
CSV_HEADER="kernel,method,target,idle_shown,idle_error,work_lost,lost_error,cpu_lost,throughput,ticks_pct,settle_s,sync_pct,host_cpu_s_per_munit,pkg_c6,pkg_w,base_w,uj_per_unit,perf_per_w,temp_c,settle_windows,run"

# write_csv DIR RUN: the rows of the run whose logs and marks are in DIR
write_csv() {
	local dir=$1 run=$2 label
	for label in "${LABELS[@]}"; do
		tr -d '\r' <"$dir/console-$label.log" | grep '^BENCH-RESULT' |
			awk -v label="$label" -v marks="$dir/marks.txt" -v run="$run" '
			BEGIN {
				while ((getline l < marks) > 0) {
					split(l, f, " ")
					key = f[1] " " f[4] " " f[5]
					if (f[3] == "begin") c0[key] = f[6]; else c1[key] = f[6]
				}
			}
			{
				for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
				key = label " " v["method"] " " v["target"]
				units = v["rate"] * v["secs"] / 1e6
				host = units > 0 ? (c1[key] - c0[key]) / 100 / units : 0
				t = v["target"]
				printf "%s,%s,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%.1f,%.2f,%s,%.4f,%.2f,%.3f,%.3f,%.4f,%.3f,%d,%d,%d\n",
					label, v["method"], t, v["idle"], v["idle"] - t,
					v["lost"], v["lost"] - t, v["cpulost"], 1 - v["lost"] / 100,
					v["ticks"], v["settle"], v["sync"], host,
					v["pc6"], v["watts"], v["basewatts"], v["ujpu"], v["ppw"],
					v["temp"] == "" ? -1 : v["temp"],
					v["settlewin"] == "" ? -1 : v["settlewin"], run
			}'
	done
}

print_table() {
	stage "results ($SMP vCPUs, TCG; idle and lost in % of all CPUs' wall time)"
	column -s, -t "$CSV"
	stage "summary per method: mean/max |error| against the target over the targets"
	awk -F, 'function abs(x) { return x < 0 ? -x : x }
	NR > 1 && $3 > 0 {
		k = $1 " " $2; n[k]++
		e = abs($5); si[k] += e; if (e > mi[k]) mi[k] = e
		e = abs($7); sw[k] += e; if (e > mw[k]) mw[k] = e
		e = abs($8 - $3); sc[k] += e; if (e > mc[k]) mc[k] = e
		if ($11 > ms[k]) { ms[k] = $11; settle_win[k] = $20 }
		if ($11 < 0) never[k]++
		if ($12 >= 0 && (!(k in sy) || $12 < sy[k])) sy[k] = $12
		if ($14 >= 0) { np[k]++; e = abs($14 - $3); sp[k] += e; if (e > mp[k]) mp[k] = e }
		if ($18 > 0) { nq[k]++; sq[k] += $18; if (!(k in lq) || $18 < lq[k]) lq[k] = $18 }
	}
	END {
		printf "%-20s %13s %13s %13s %12s %9s %13s %13s\n", "kernel method", "idle shown", "CPU lost", "work lost", "settle max", "sync min", "pkg C6", "perf/W mean"
		for (k in n)
			printf "%-20s %5.2f/%-7.2f %5.2f/%-7.2f %5.2f/%-7.2f %12s %9s %13s %13s\n", k,
				si[k] / n[k], mi[k], sc[k] / n[k], mc[k], sw[k] / n[k], mw[k],
				never[k] ? "never " never[k] "x" : ms[k] "s" (settle_win[k] > 0 ? "/" settle_win[k] "w" : ""),
				(k in sy) ? sy[k] "%" : "-",
				np[k] ? sprintf("%.2f/%.2f", sp[k] / np[k], mp[k]) : "-",
				nq[k] ? sprintf("%.3f/%.3f", sq[k] / nq[k], lq[k]) : "-"
	}' "$CSV" | sort
	info "pkg C6: mean/max |residency - target| in points; perf/W: mean/min of"
	info "(the loads' CPU time per joule) over the step against the unclamped window before it"
	local dir label
	for dir in $(run_dirs); do
		for label in "${LABELS[@]}"; do
			tr -d '\r' <"$dir/console-$label.log" | awk -v label="$label" '
				$1 == "BENCH-IDLECOST" {
					sub("unloaded=", "", $2); sub("loaded=", "", $3)
					print "    LOC wakeups/s of an idle guest, " label " kernel: " $2 " (module not loaded), " $3 " (loaded, target 0)"
				}'
		done
	done
}

# print_spread: with --repeat, each figure's mean and standard deviation
# over the runs, per method and target; a negative figure (settle: never;
# sync, package figures: not measured) is left out of its mean
print_spread() {
	stage "spread over $REPEAT runs: mean sd per method and target"
	awk -F, '
	NR > 1 {
		k = $1 " " $2 " " $3
		if (!(k in runs)) order[++keys] = k
		runs[k]++
		# idle shown, CPU lost, work lost, settle, sync, pkg C6, perf/W
		split("4 8 6 11 12 14 18", col, " ")
		for (j = 1; j <= 7; j++) {
			x = $(col[j])
			if (x < 0) continue
			n[k, j]++; s[k, j] += x; q[k, j] += x * x
		}
	}
	END {
		printf "%-26s %4s", "kernel method target", "runs"
		split("idle CPU-lost work-lost settle sync pkg-C6 perf/W", name, " ")
		for (j = 1; j <= 7; j++) printf " %13s", name[j]
		printf "\n"
		for (i = 1; i <= keys; i++) {
			k = order[i]
			printf "%-26s %4d", k, runs[k]
			for (j = 1; j <= 7; j++) {
				c = n[k, j]
				if (!c) { printf " %13s", "-"; continue }
				m = s[k, j] / c; v = q[k, j] / c - m * m
				# perf/W is a ratio near 1: three decimals
				fmt = j == 7 ? " %7.3f %5.3f" : " %7.2f %5.2f"
				printf fmt, m, (c > 1 && v > 0 ? sqrt(v * c / (c - 1)) : 0)
			}
			printf "\n"
		}
	}' "$CSV"
}

# print_against_offline: perf/W of this driver, the stock one and cpu.max
# against offlining's at the same throttle, the CPU the loads lost (not
# the target, nor the idle shown, which the stock kernel gets wrong).
# Offlining reaches multiples of 100/N exactly and nothing between; its
# perf/W is taken at each level it reached (0 also from the unthrottled
# run, perf/W 1) and interpolated linearly between them, as offlining and
# onlining a CPU in turn would average.
print_against_offline() {
	stage "perf/W against offlining interpolated to the same CPU lost"
	awk '
	BEGIN { FS = "," }
	NR > 1 && $1 == "patched" && $2 == "offline" && $18 > 0 { x[++n] = $8; y[n] = $18 }
	NR > 1 && $18 > 0 && ($2 == "powerclamp" || $2 == "cpumax") { row[++m] = $1 " " $2 " " $3 " " $18 " " $8 }
	END {
		x[0] = 0; y[0] = 1
		# offline points sorted by CPU lost, one per level: the mean of
		# those within 5 points of each other (0 or k x 100 / N)
		for (i = 0; i <= n; i++) { k = sprintf("%.0f", x[i] / 10); sx[k] += x[i]; sy[k] += y[i]; c[k]++ }
		for (k in c) { lv[++L] = sx[k] / c[k]; pw[L] = sy[k] / c[k] }
		for (i = 1; i <= L; i++) for (j = i + 1; j <= L; j++) if (lv[j] < lv[i]) {
			t = lv[i]; lv[i] = lv[j]; lv[j] = t; t = pw[i]; pw[i] = pw[j]; pw[j] = t }
		if (L < 2) { print "    offlining reached fewer than two idle levels: no interpolation"; exit }
		printf "%-20s %6s %9s %8s %12s %7s\n", "kernel method", "target", "CPU lost", "perf/W", "offline(int)", "ratio"
		for (r = 1; r <= m; r++) {
			split(row[r], f, " ")
			# past the last level by up to 5 points: its segment extended
			T = f[5]; if (T > lv[L] + 5 || T < 0) continue
			for (i = 1; i < L - 1 && lv[i + 1] < T; i++) ;
			o = pw[i] + (pw[i + 1] - pw[i]) * (T - lv[i]) / (lv[i + 1] - lv[i])
			printf "%-20s %6d %9.2f %8.3f %12.3f %7.3f\n", f[1] " " f[2], f[3], T, f[4], o, f[4] / o
		}
	}
	' "$CSV"
}

plot() {
	command -v gnuplot >/dev/null || { info "gnuplot missing: no plot"; return; }
	local data=$OUT/plot.dat m
	for m in "patched powerclamp" "stock powerclamp" "patched cpumax" "patched offline"; do
		echo "# $m"
		# the mean over the runs at each target
		awk -F, -v k="$m" '$1 " " $2 == k {
				if (!($3 in n)) t[++m] = $3
				n[$3]++; split("4 8 6 14 18", col, " ")
				for (j = 1; j <= 5; j++) s[$3, j] += $(col[j])
			}
			END {
				for (i = 1; i <= m; i++) {
					printf "%s", t[i]
					for (j = 1; j <= 5; j++) printf " %.3f", s[t[i], j] / n[t[i]]
					printf "\n"
				}
			}' "$CSV"
		printf '\n\n'
	done >"$data"
	gnuplot <<-EOF
		set terminal pngcairo size 1500,$([ -n "$PACKAGE" ] && echo 960 || echo 480) font "sans,10"
		set output "$OUT/achieved-vs-target.png"
		set multiplot layout $([ -n "$PACKAGE" ] && echo 2 || echo 1),3 title "Idle targets under QEMU TCG${PACKAGE:+ on the emulated package}, $SMP vCPUs, one counting load each"
		set xlabel "target idle (%)"; set key top left; set grid
		set xrange [0:52]; set yrange [0:70]
		titles = "powerclamp(patched) powerclamp(stock) cpu.max offline"
		set ylabel "idle shown by /proc/stat (%)"
		plot x title "ideal" dt 2 lc "gray", \
			for [i=0:3] "$data" index i using 1:2 with linespoints title word(titles, i + 1)
		set ylabel "CPU time the loads lost (%, schedstat)"
		plot x title "ideal" dt 2 lc "gray", \
			for [i=0:3] "$data" index i using 1:3 with linespoints title word(titles, i + 1)
		set ylabel "work the loads lost (%, counted)"
		plot x title "ideal" dt 2 lc "gray", \
			for [i=0:3] "$data" index i using 1:4 with linespoints title word(titles, i + 1)
		if ("$PACKAGE" ne "") {
			set ylabel "package C6 residency (%, MSR)"
			plot x title "ideal" dt 2 lc "gray", \
				for [i=0:3] "$data" index i using 1:5 with linespoints title word(titles, i + 1)
			set ylabel "performance per watt, against unclamped"
			set yrange [0.5:1.5]
			plot 1 title "unclamped" dt 2 lc "gray", \
				for [i=0:3] "$data" index i using 1:6 with linespoints title word(titles, i + 1)
		}
		unset multiplot
	EOF
	info "plot: $OUT/achieved-vs-target.png"
}

main() {
	mkdir -p "$OUT"
	"$REPO_DIR/scripts/preflight.sh"
	take_lock
	"$REPO_DIR/scripts/install-deps.sh"
	command -v gnuplot >/dev/null || apt-get install -y -q gnuplot-nox >/dev/null
	"$REPO_DIR/scripts/prepare-tree.sh"
	PC_KERNEL=bench "$REPO_DIR/scripts/build-kernel.sh"
	PC_KERNEL=bench "$REPO_DIR/scripts/build-rootfs.sh"
	"$REPO_DIR/scripts/fetch-stock-kernel.sh"
	local tree
	for tree in $TREES; do
		PC_TREE=$tree "$REPO_DIR/scripts/install-deps.sh"
		PC_TREE=$tree "$REPO_DIR/scripts/prepare-tree.sh"
		PC_TREE=$tree PC_KERNEL=bench "$REPO_DIR/scripts/build-kernel.sh"
		PC_TREE=$tree PC_KERNEL=bench "$REPO_DIR/scripts/build-rootfs.sh"
	done
	local patched_qemu=() stock_qemu=() stock_append=""
	if [ -n "$PACKAGE" ]; then
		"$REPO_DIR/scripts/build-emulator.sh"
		patched_qemu=(--emulator package --cpu "Skylake-Client,pkg-model=on")
		stock_qemu=(--emulator package --cpu "Skylake-Client,+monitor,pkg-model=on")
		stock_append=idle=halt
	fi
	if [ -n "$TIMELINE" ]; then
		: >"$RUN_DIR/marks.txt"
		PC_KERNEL=bench boot patched timeline-powerclamp,timeline-cpumax "" \
			"${patched_qemu[@]}"
		PC_KERNEL=bench boot stock timeline-powerclamp "$stock_append" \
			--kernel "$STOCK_KERNEL" --initrd "$STOCK_INITRD" "${stock_qemu[@]}"
		"$REPO_DIR/scripts/timeline.sh" "$OUT" "patched=$OUT/console-patched.log" \
			"stock=$OUT/console-stock.log"
		return
	fi
	local run
	for ((run = 1; run <= REPEAT; run++)); do
		((REPEAT == 1)) || RUN_DIR=$OUT/run-$run
		mkdir -p "$RUN_DIR"
		: >"$RUN_DIR/marks.txt"
		# a high target needs max_idle raised at load: modprobe takes
		# module options from the kernel command line
		BOOT_TARGETS="$TARGETS${HIGH:+ $HIGH}" PC_KERNEL=bench boot patched \
			none,powerclamp,cpumax,offline,idlecost \
			"${HIGH:+intel_powerclamp.max_idle=85}" "${patched_qemu[@]}"
		PC_KERNEL=bench boot stock none,powerclamp,idlecost "$stock_append" \
			--kernel "$STOCK_KERNEL" --initrd "$STOCK_INITRD" "${stock_qemu[@]}"
		for tree in $TREES; do
			BOOT_TARGETS="$TARGETS${HIGH:+ $HIGH}" PC_TREE=$tree PC_KERNEL=bench \
				boot "$tree" none,powerclamp,idlecost \
				"$stock_append${HIGH:+ intel_powerclamp.max_idle=75}" "${stock_qemu[@]}"
		done
	done
	{
		echo "$CSV_HEADER"
		run=0
		for RUN_DIR in $(run_dirs); do write_csv "$RUN_DIR" "$((++run))"; done
	} >"$CSV"
	{
		print_table
		print_against_offline
		((REPEAT == 1)) || print_spread
	} | tee "$OUT/table.txt"
	plot
	info "CSV: $CSV"
}

main
