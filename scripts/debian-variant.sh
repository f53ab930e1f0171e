#!/usr/bin/env bash
# The series where Debian's users run it: builds the "debian" kernel (the
# kernel without debug options plus config-fragments/variants/debian.config,
# Debian's own timekeeping, accounting, preemption and RCU options: full
# dynticks, generic virtual CPU accounting, dynamic preemption) and boots
# the accounting and accuracy checks on it, three ways:
#   plain           as Debian boots it (no CPU is full-dynticks)
#   nohz_full       nohz_full=1: CPU 1 full-dynticks, clamped because the
#                   checks' reset names every CPU in cpumask
#   preempt_full    threadirqs preempt=full
# Prints each boot's verdict and the figures its checks logged. Not part of
# the suite: a fourth kernel build (about 13 minutes from an empty ccache).
#
# PC_KERNEL=debian-debug boots the same kernel with separate IRQ time
# accounting, lockdep and atomic-sleep checking added
# (config-fragments/variants/debian-debug.config): a fifth build, for the
# nohz_full boot above all, where patch 3's vtime code runs.
#
# --unpatched also builds the same kernel from a tree of its own without
# the series' accounting patches (PC_UNPATCHED in scripts/lib.sh; one more
# build, about 13 minutes cold), boots it the same ways after each boot of
# the patched one, and prints its figures beside theirs, line by line. Its
# checks are expected to fail: the figures are what it is run for.
#
# usage: [PC_KERNEL=debian-debug] scripts/debian-variant.sh [--unpatched] [BOOT...]
#        (default: all three)
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --unpatched ARGS -- "$@" <<'EOF'
usage: [PC_KERNEL=debian-debug] scripts/debian-variant.sh [--unpatched] [BOOT...]

The series where Debian's users run it: builds the "debian" kernel (the
kernel without debug options plus config-fragments/variants/debian.config,
Debian's timekeeping, accounting, preemption and RCU options) and boots
the accounting and accuracy checks on it, on 2 vCPUs, once per BOOT
(default: all three):
  plain          as Debian boots it
  nohz_full      nohz_full=1: CPU 1 full-dynticks
  preempt_full   threadirqs preempt=full
Prints each boot's verdict and the figures its checks logged. Not part of
the suite. Sets the machine up as scripts/demo.sh does (root, apt, the
cache and its lock).

  --unpatched    (first) also build the same kernel without the series'
                 accounting patches, boot it the same ways after each
                 patched boot, and print its figures beside theirs

PC_KERNEL=debian-debug boots the same kernel with IRQ time accounting,
lockdep and atomic-sleep checking added
(config-fragments/variants/debian-debug.config).
EOF
case "${PC_KERNEL:-}" in
debian-debug) ;;
*) export PC_KERNEL=debian ;;
esac
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

FRAGMENT=$REPO_DIR/config-fragments/variants/debian.config
DEBIAN_CONFIG=/usr/src/$CONFIG_PACKAGE/config.amd64_none_amd64.xz
CHECKS=device,idle_accounting,accuracy,kmemleak,health
declare -A APPEND=(
	[plain]=""
	[nohz_full]="nohz_full=1"
	[preempt_full]="threadirqs preempt=full"
)

# from_debian: every line of the fragment stands as it is in Debian's config
from_debian() {
	local line bad=0 debian
	debian=$(xz -dc "$DEBIAN_CONFIG")
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=* | "# CONFIG_"*" is not set")
			grep -qxF -- "$line" <<<"$debian" || {
				echo "    not in Debian's config: $line"
				bad=1
			}
			;;
		esac
	done <"$FRAGMENT"
	((bad == 0)) || die "$FRAGMENT no longer matches $DEBIAN_CONFIG"
	info "every option of ${FRAGMENT##*/} as in ${DEBIAN_CONFIG##*/}"
}

FIGURES='^ *# (idle_accounting|accuracy|target|unclamped|ticks|kidle)'

# boot_variant NAME [unpatched]: the checks on 2 vCPUs with NAME's command
# line, on the patched kernel or on the unpatched one
boot_variant() {
	local name=$1 unpatched=${2:+1} verdict=0 label
	label=$PC_KERNEL${unpatched:+-unpatched}-$name
	stage "guest: $PC_KERNEL kernel${unpatched:+ without the accounting patches}, $name (${APPEND[$name]:-no extra arguments})"
	PC_UNPATCHED=${unpatched:-0} "$REPO_DIR/run-qemu.sh" --mode test --smp 2 \
		--cpu Skylake-Client,+monitor --timeout 900 \
		--log "$LOG_DIR/console-$label.log" \
		--append "pc.checks=$CHECKS pc.debug=0 ${APPEND[$name]}" || verdict=$?
	grep -E "$FIGURES" "$LOG_DIR/ktap-$label.log" | sed 's/^ */    /' || true
	RESULTS+=("$label: verdict $verdict, $( (python3 "$REPO_DIR/scripts/ktap-parse.py" \
		--name "$label" --expect "$CHECKS" \
		"$LOG_DIR/ktap-$label.log" || true) | tail -n 1)")
}

# print_beside NAME: each figure line of the patched boot, then the same
# line of the unpatched one (the n-th line with the same text before its
# first colon)
print_beside() {
	stage "$PC_KERNEL, $1: with the series (+) and without its accounting patches (-)"
	awk -v figures="$FIGURES" '
		$0 !~ figures { next }
		{ sub(/^ *# /, ""); key = $0; sub(/:.*/, "", key); n = ++seen[FILENAME, key] }
		FNR == NR { order[++lines] = key SUBSEP n; patched[key, n] = $0; next }
		{ unpatched[key, n] = $0 }
		END {
			for (i = 1; i <= lines; i++) {
				print "    + " patched[order[i]]
				if (order[i] in unpatched)
					print "    - " unpatched[order[i]]
			}
		}' "$LOG_DIR/ktap-$PC_KERNEL-$1.log" "$LOG_DIR/ktap-$PC_KERNEL-unpatched-$1.log"
}

# set_up_unpatched: the tree, kernel and image of PC_UNPATCHED=1
set_up_unpatched() {
	stage "the same kernel without the series' accounting patches"
	PC_UNPATCHED=1 "$REPO_DIR/scripts/prepare-tree.sh"
	PC_UNPATCHED=1 "$REPO_DIR/scripts/build-kernel.sh"
	PC_UNPATCHED=1 "$REPO_DIR/scripts/build-rootfs.sh"
}

RESULTS=()
UNPATCHED=""
if [ "${1:-}" = --unpatched ]; then
	UNPATCHED=1
	shift
fi
[ -f "$DEBIAN_CONFIG" ] || die "$DEBIAN_CONFIG missing (run scripts/install-deps.sh)"
from_debian
set_up_kernel
[ -z "$UNPATCHED" ] || set_up_unpatched
BOOTED=()
for name in "${@:-plain nohz_full preempt_full}"; do
	for n in $name; do
		[ -n "${APPEND[$n]+set}" ] || die "no boot named '$n' (plain, nohz_full, preempt_full)"
		boot_variant "$n"
		[ -z "$UNPATCHED" ] || boot_variant "$n" unpatched
		BOOTED+=("$n")
	done
done
if [ -n "$UNPATCHED" ]; then
	for n in "${BOOTED[@]}"; do
		print_beside "$n"
	done
fi
echo
printf '%s\n' "${RESULTS[@]}"
