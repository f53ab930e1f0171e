#!/usr/bin/env bash
# Draw the benchmark's timelines: for each BENCH-TIMELINE block in the
# console logs given, one second of what every CPU did (the load, the
# injecting thread outside forced idle, forced idle, other idle, other
# tasks), the interrupts each took, and the package's deepest state as the
# emulated package models it (C6 while every CPU is idle). Writes
# timeline.png, timeline-zoom.png (one forced idle period and its edges)
# and timeline.txt into OUT; the text has, per timeline, each
# state's share of the second and the injecting threads' time on CPU
# outside forced idle per period: where the loads' extra lost CPU goes.
#
# usage: scripts/timeline.sh OUT LABEL=CONSOLE-LOG...
#   e.g. scripts/timeline.sh out/bench patched=out/bench/console-patched.log
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse ARGS -- "$@" <<'EOF'
usage: scripts/timeline.sh OUT LABEL=CONSOLE-LOG...
  e.g. scripts/timeline.sh out/bench patched=out/bench/console-patched.log

Draws the benchmark's timelines (scripts/benchmark.sh --timeline): for
each BENCH-TIMELINE block in the console logs given, one second of what
every CPU did (the load, the injecting thread outside forced idle, forced
idle, other idle, other tasks), the interrupts each took, and the
package's deepest state as the emulated package models it. Writes
timeline.txt (each state's share of the second per CPU) and, with
gnuplot, timeline.png and timeline-zoom.png into OUT.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

(($# >= 2)) || die "usage: $0 OUT LABEL=CONSOLE-LOG..."
OUT=$1
shift
mkdir -p "$OUT"

# extract LABEL LOG: one file of TL lines per block, named after the
# label and the method; prints each file's stem
extract() {
	local label=$1 log=$2
	tr -d '\r' <"$log" | awk -v out="$OUT" -v label="$label" '
		$1 == "BENCH-TIMELINE" && $2 == "begin" {
			stem = "timeline-" label "-" $3; file = out "/" stem ".tl"
			printf "# %s %s target %s, %s CPUs\n", label, $3, $4, $5 >file
			print stem
			next
		}
		$1 == "BENCH-TIMELINE" { close(file); file = ""; next }
		file != "" && $1 == "TL" { print >file }'
}

# segments STEM: from STEM.tl, the drawn second as STEM.seg ("row t0_ms
# t1_ms colour"; rows are the CPUs and -1, the package) and STEM.irq ("row
# t_ms name"); prints the second's figures
segments() {
	local stem=$OUT/$1
	awk -v seg="$stem.seg" -v irq="$stem.irq" -v span=1.0 '
		# colours of the states, 0xRRGGBB in decimal (mawk reads no hex)
		BEGIN {
			col["load"] = 2924588; col["inject"] = 16744206	# 2ca02c ff7f0e
			col["forced"] = 2047385; col["idle"] = 10406625	# 1f3d99 9ecae1
			col["other"] = 10066329; col["pkg"] = 9725885	# 999999 9467bd
		}
		NR == 1 { ncpu = $(NF - 1) + 0; title = substr($0, 3); next }
		{ ts[NR] = $2; cpu[NR] = $3; kind[NR] = $4; arg[NR] = $5; last = NR }
		function state(c) {
			if (inidle[c]) return task[c] == "inject" ? "forced" : "idle"
			return task[c] == "" ? "" : task[c]
		}
		# close CPU c state up to time t, clipped to the drawn second
		function close_cpu(c, t,   s, a) {
			s = state(c); a = since[c] < t0 ? t0 : since[c]
			if (s != "" && t > a) {
				printf "%d %.3f %.3f %d\n", c, (a - t0) * 1e3, (t - t0) * 1e3, col[s] >seg
				share[c, s] += t - a
				if (s == "inject") outside[c] += t - a
			}
			since[c] = t
		}
		function close_pkg(t,   a) {
			a = pkg_since < t0 ? t0 : pkg_since
			if (pkg_in && t > a) {
				printf "-1 %.3f %.3f %d\n", (a - t0) * 1e3, (t - t0) * 1e3, col["pkg"] >seg
				pkg_share += t - a
			}
			pkg_since = t
		}
		# the drawn second ends 50 ms before the trace, where the guest
		# script itself wakes to stop it
		END {
			t1 = ts[last] - 0.05; t0 = t1 - span
			for (i = 2; i <= last && ts[i] <= t1; i++) {
				c = cpu[i]; t = ts[i]
				if (kind[i] == "irq") {
					if (t >= t0) {
						printf "%d %.3f %s\n", c, (t - t0) * 1e3, arg[i] >irq
						irqs[c]++
					}
					continue
				}
				if (kind[i] != "sw" && kind[i] != "idle") continue
				close_cpu(c, t)
				if (kind[i] == "sw") {
					if (arg[i] == "inject" && t >= t0) periods[c]++
					task[c] = arg[i]
				} else {
					inidle[c] = arg[i]
				}
				n = 0
				for (k = 0; k < ncpu; k++) n += inidle[k]
				if ((n == ncpu) != pkg_in) { close_pkg(t); pkg_in = (n == ncpu) }
			}
			for (c = 0; c < ncpu; c++) close_cpu(c, t1)
			close_pkg(t1)
			print title
			for (c = 0; c < ncpu; c++) {
				printf "  CPU %d:", c
				split("load inject forced idle other", names, " ")
				for (j = 1; j <= 5; j++)
					printf " %s %.1f%%", names[j], 100 * share[c, names[j]] / span
				printf ", %d interrupts, %d thread wakeups", irqs[c], periods[c]
				if (periods[c])
					printf ", %.0f us on CPU outside forced idle per wakeup",
						1e6 * outside[c] / periods[c]
				printf "\n"
			}
			printf "  package C6 (every CPU idle): %.1f%%\n", 100 * pkg_share / span
		}' "$stem.tl"
	touch "$stem.irq"
}

# zoom STEM: "FROM TO" in ms around the fifth package C6 span that starts
# after 5 ms or more awake: from 3 ms before it, 33 ms long, so one whole
# forced idle period of 24 ms and both its edges (the second when the
# trace has fewer)
zoom() {
	awk '$1 != -1 { next }
		$2 - last >= 5 && ++n == 5 { printf "%.1f %.1f\n", $2 - 3, $2 + 30; found = 1; exit }
		{ last = $3 }
		END { if (!found) print "0 1000" }' "$OUT/$1.seg"
}

# plot FILE ZOOM STEM...: one panel per timeline, stacked, into FILE; with
# ZOOM 1 each panel shows one forced idle period and its edges
plot() {
	local file=$1 zoomed=$2 stem panels="" range
	shift 2
	for stem in "$@"; do
		range="0 1000"
		[ "$zoomed" = 0 ] || range=$(zoom "$stem")
		panels+="
			set title \"$(head -n 1 "$OUT/$stem.tl" | sed 's/^# //')$([ "$zoomed" = 0 ] || echo ", one forced idle period")\"
			set xrange [${range% *}:${range#* }]
			plot \"$OUT/$stem.seg\" using 2:1:(\$3 - \$2):(0):4 with vectors nohead lw 16 lc rgb variable notitle, \\
				\"$OUT/$stem.irq\" using 2:(\$1 + 0.38) with points pt 7 ps $([ "$zoomed" = 0 ] && echo 0.35 || echo 0.8) lc rgb \"black\" title \"interrupt\", \\
				NaN with lines lw 8 lc rgb \"#2ca02c\" title \"load\", \\
				NaN with lines lw 8 lc rgb \"#ff7f0e\" title \"injecting thread, outside idle\", \\
				NaN with lines lw 8 lc rgb \"#1f3d99\" title \"forced idle\", \\
				NaN with lines lw 8 lc rgb \"#9ecae1\" title \"idle\", \\
				NaN with lines lw 8 lc rgb \"#999999\" title \"other tasks\", \\
				NaN with lines lw 8 lc rgb \"#9467bd\" title \"package C6 (every CPU idle)\""
	done
	gnuplot <<-EOF
		set terminal pngcairo size 1500,$((330 * $#)) font "sans,10"
		set output "$file"
		set multiplot layout $#,1
		set xlabel "ms"
		set yrange [-1.6:$(awk -v f="$OUT/$1.tl" 'BEGIN { getline l <f; n = split(l, w, " "); print w[n - 1] - 0.4 }')]
		set ytics ("package" -1$(awk -v f="$OUT/$1.tl" 'BEGIN { getline l <f; n = split(l, w, " "); for (c = 0; c < w[n - 1]; c++) printf ", \"CPU %d\" %d", c, c }'))
		set key outside right top
		$panels
		unset multiplot
	EOF
}

main() {
	local arg stems=()
	for arg in "$@"; do
		[ -r "${arg#*=}" ] || die "no console log ${arg#*=}"
		mapfile -t -O "${#stems[@]}" stems < <(extract "${arg%%=*}" "${arg#*=}")
	done
	((${#stems[@]})) || die "no BENCH-TIMELINE block in $*"
	local stem
	for stem in "${stems[@]}"; do segments "$stem"; done | tee "$OUT/timeline.txt"
	command -v gnuplot >/dev/null || { info "gnuplot missing: no picture"; return; }
	plot "$OUT/timeline.png" 0 "${stems[@]}"
	plot "$OUT/timeline-zoom.png" 1 "${stems[@]}"
	info "timeline: $OUT/timeline.png and timeline-zoom.png, figures in $OUT/timeline.txt"
}

main "$@"
