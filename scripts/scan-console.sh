#!/usr/bin/env bash
# usage: scan-console.sh CONSOLE_LOG
#
# Scan a guest console log for kernel splats. Exits 0 if there is none, 1 if
# there is one (printing the matching lines as "    LINE:TEXT", at most 20,
# then the log around the first), 2 if the log cannot be read or the usage
# is wrong. tests/selftest-console.sh runs it on tests/console/*.log.
#
# Not splats, and matched by no pattern below:
#  - "RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to
#    RETBleed attacks, data leaks possible!", a mitigation report at boot
#    under TCG. Only that exact text is taken out of a line before it is
#    matched, so a splat printed into the same line is still found.
#  - "NOHZ tick-stop error: local softirq work is pending, handler #NN!!!"
#    (kernel/time/tick-sched.c), which idle injection can provoke: the
#    tick is kept, nothing is lost.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse ARGS -- "$@" <<'EOF'
usage: scripts/scan-console.sh CONSOLE_LOG

Scans a guest console log for kernel splats (WARNING, BUG, Oops, lockdep,
KASAN, kmemleak, RCU stall, hung task, soft lockup, ...). Exits 0 if there
is none, 1 if there is one (printing the matching lines, at most 20, then
the log around the first), 2 if the log cannot be read or the usage is
wrong.
EOF
export LC_ALL=C

if (($# != 1)); then
	echo "usage: scan-console.sh CONSOLE_LOG" >&2
	exit 2
fi
log=$1
if [ ! -f "$log" ] || [ ! -r "$log" ]; then
	echo "scan-console.sh: cannot read the console log '$log'" >&2
	exit 2
fi

# Extended regular expressions (grep -E), matched case-sensitively.
SPLATS=(
	'------------\[ cut here \]------------'
	'WARNING:'                     # WARN*(), lockdep, suspicious RCU usage
	'BUG:'                         # NULL deref, page fault, sleeping in atomic,
	                               # soft lockup, workqueue lockup, KASAN, ...
	'kernel BUG at'                # BUG_ON()
	'Oops'
	'Kernel panic'
	'general protection fault'
	'invalid opcode:'
	'Unable to handle'
	'stack-protector: Kernel stack is corrupted'
	'Call Trace:'
	'possible circular locking dependency'
	'possible recursive locking'
	'inconsistent lock state'
	'suspicious RCU usage'
	'KASAN:'
	'UBSAN:'
	'refcount_t:'
	'unreferenced object'          # kmemleak report
	'suspected memory leak'        # kmemleak scan: "N new suspected memory leaks"
	'detected stall'               # RCU stall, "self-detected stall"
	'detected expedited stalls'    # RCU expedited grace-period stall
	'rcu_preempt detected'
	'blocked for more than'        # hung task
	'soft lockup'
	'hard LOCKUP'
	'RT throttling activated'      # a SCHED_FIFO thread starved the CPU
	'ODEBUG:'
	'list_add corruption'
	'list_del corruption'
)
NOTICE='RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks, data leaks possible!'

# Line numbers of the matching lines, the notice taken out of each line
# first. grep: 0 matches, 1 none, 2 trouble (an error, not "clean").
if ! nums=$(awk -v notice="$NOTICE" '{
		while ((i = index($0, notice)) > 0)
			$0 = substr($0, 1, i - 1) substr($0, i + length(notice))
		print
	}' "$log" | { grep -a -n -E -f <(printf '%s\n' "${SPLATS[@]}") || (($? == 1)); } |
	cut -d: -f1); then
	echo "scan-console.sh: could not scan '$log'" >&2
	exit 2
fi

if [ -z "$nums" ]; then
	echo "    console: no kernel splat"
	exit 0
fi
echo "KERNEL SPLAT on the guest console ($log):"
# The matching lines as they are in the log, the first 20.
awk 'NR == FNR { want[$1]; next }
	FNR in want { if (++n <= 20) printf "    %d:%s\n", FNR, $0 }
	END { if (n > 20) printf "    ... %d more matching lines\n", n - 20 }' \
	<(printf '%s\n' "$nums") "$log"
first=${nums%%$'\n'*}
echo "    --- context from line $first ---"
sed -n "$((first > 5 ? first - 5 : 1)),$((first + 25))p" "$log" | sed 's/^/    | /'
exit 1
