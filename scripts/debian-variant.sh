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
# nohz_full boot above all, where patch 2's vtime code runs.
#
# usage: [PC_KERNEL=debian-debug] scripts/debian-variant.sh [BOOT...]
#        (default: all three)
set -euo pipefail
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

# boot_variant NAME: the checks on 2 vCPUs with NAME's command line
boot_variant() {
	local name=$1 verdict=0 console=$LOG_DIR/console-$PC_KERNEL-$1.log
	stage "guest: $PC_KERNEL kernel, $name (${APPEND[$name]:-no extra arguments})"
	"$REPO_DIR/run-qemu.sh" --mode test --smp 2 --cpu Skylake-Client,+monitor \
		--timeout 900 --log "$console" \
		--append "pc.checks=$CHECKS pc.debug=0 ${APPEND[$name]}" || verdict=$?
	grep -E '^ *# (idle_accounting|accuracy|target|unclamped|ticks|kidle)' \
		"$LOG_DIR/ktap-$PC_KERNEL-$name.log" | sed 's/^ */    /' || true
	RESULTS+=("$name: verdict $verdict, $( (python3 "$REPO_DIR/scripts/ktap-parse.py" \
		--name "$PC_KERNEL-$name" --expect "$CHECKS" \
		"$LOG_DIR/ktap-$PC_KERNEL-$name.log" || true) | tail -n 1)")
}

RESULTS=()
[ -f "$DEBIAN_CONFIG" ] || die "$DEBIAN_CONFIG missing (run scripts/install-deps.sh)"
from_debian
set_up_kernel
for name in "${@:-plain nohz_full preempt_full}"; do
	for n in $name; do
		[ -n "${APPEND[$n]+set}" ] || die "no boot named '$n' (plain, nohz_full, preempt_full)"
		boot_variant "$n"
	done
done
echo
printf '%s\n' "${RESULTS[@]}"
