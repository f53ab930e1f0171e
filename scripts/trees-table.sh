#!/usr/bin/env bash
# Tabulate the mainline_accuracy results of scripts/trees.sh logs: one row
# per log and target, from the diagnostics the guest printed.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse ARGS -- "$@" <<'USAGE'
usage: scripts/trees-table.sh LOG...

Reads the guest diagnostics of mainline_accuracy in each LOG (a console or
the output of scripts/trees.sh or scripts/check.sh) and prints one row per
target: the work the loads lost to the clamp, /proc/stat's idle and ticks
(% of wall), the injecting threads' utime+stime as top shows them (% of
their CPUs) and turbostat's package C6 (%).
USAGE
(($#)) || { echo "trees-table.sh: name at least one log (see --help)" >&2; exit 2; }
printf '%-28s %6s %6s %6s %7s %8s %7s\n' log target lost idle ticks threads pkg_c6
for log in "$@"; do
	awk -v name="$(basename "$log" .log)" '
	/# target [0-9]+: work lost to the clamp/ {
		t = $3; sub(":", "", t)
		for (i = 1; i <= NF; i++) {
			if ($i == "clamp") lost[t] = $(i + 1)
			if ($i == "idle" && $(i - 1) == "/proc/stat") idle[t] = $(i + 1)
			if ($i == "ticks") ticks[t] = $(i + 1)
			if ($i == "C6") c6[t] = $(i + 1)
		}
		order[n++] = t
	}
	/# target [0-9]+: .*(idle_inject|kidle_inject) threads: utime/ {
		t = $3; sub(":", "", t)
		u = $7; s = $9; gsub(/[%,]/, "", u); gsub(/[%,]/, "", s)
		thr[t] = sprintf("%.1f", u + s)
	}
	END {
		for (i = 0; i < n; i++) {
			t = order[i]
			v = lost[t] " " idle[t] " " ticks[t] " " c6[t]
			gsub(/[%,]/, "", v); split(v, f, " ")
			printf "%-28s %6s %6s %6s %7s %8s %7s\n", name, t, f[1], f[2], f[3], thr[t], f[4]
		}
	}' "$log"
done
