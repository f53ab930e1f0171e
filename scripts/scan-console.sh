#!/usr/bin/env bash
# Scan a guest console log for kernel splats. Prints each one with a little
# context and exits 1 if any was found.
#
# The boot-time "RETBleed: WARNING: Spectre v2 mitigation leaves CPU
# vulnerable..." notice under TCG is a mitigation report, not a splat.
set -euo pipefail

log=${1:?usage: scan-console.sh CONSOLE_LOG}

SPLATS=(
	'------------\[ cut here \]------------'
	'WARNING:'
	'BUG:'
	'Oops'
	'Kernel panic'
	'general protection fault'
	'invalid opcode:'
	'Call Trace:'
	'possible circular locking dependency'
	'possible recursive locking'
	'inconsistent lock state'
	'suspicious RCU usage'
	'KASAN:'
	'UBSAN:'
	'unreferenced object'
	'detected stall'
	'rcu_preempt detected'
	'blocked for more than'
	'soft lockup'
	'hard LOCKUP'
	'ODEBUG:'
	'list_add corruption'
	'list_del corruption'
)
IGNORE='RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks'

hits=$(grep -n -E -f <(printf '%s\n' "${SPLATS[@]}") "$log" |
	grep -v -F "$IGNORE" || true)

if [ -z "$hits" ]; then
	echo "    console: no kernel splat"
	exit 0
fi
echo "KERNEL SPLAT on the guest console ($log):"
printf '%s\n' "$hits" | head -n 20 | sed 's/^/    /'
first=$(printf '%s\n' "$hits" | head -n 1 | cut -d: -f1)
echo "    --- context from line $first ---"
sed -n "$((first > 5 ? first - 5 : 1)),$((first + 25))p" "$log" | sed 's/^/    | /'
exit 1
