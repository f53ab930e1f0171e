#!/usr/bin/env bash
# The edit-and-check loop: after an edit to a patch, a guest check or a
# tool, rebuild only what changed and run the named checks in the boot of
# guest/boots that runs them, with that boot's kernel, vCPUs, CPU model,
# emulator and command line. Prints each stage's wall time and the verdict;
# exits with run-qemu.sh's verdict (0 pass, 1 checks failed, 2 crashed,
# hung or a kernel splat on the console).
#
# usage: scripts/check.sh [--break DIFF] CHECK[,CHECK...] [KERNEL-ARG...]
#   e.g. scripts/check.sh device
#        scripts/check.sh stress_hotplug,kmemleak,health pc.scale=10
#
# --break DIFF applies DIFF (a diff of the patched kernel tree, -p1) for
# this run only and takes it out again when the run ends: how a check is
# shown red against a deliberately broken driver. The files it touched are
# rebuilt by the next run.
#
# The checks must all belong to one boot. Needs a machine the suite has set
# up once (scripts/install-deps.sh ran, the cache filled); it takes the
# cache's lock like the README's commands.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --break= ARGS -- "$@" <<'EOF'
usage: ./check.sh [--break DIFF] CHECK[,CHECK...] [KERNEL-ARG...]
  e.g. ./check.sh device
       ./check.sh stress_hotplug,kmemleak,health pc.scale=10
       ./check.sh --break tests/breaks/thread-cost.diff high_targets

The edit-and-check loop (also scripts/check.sh): after an edit to a patch,
a guest check or a tool, rebuilds only what changed and runs the named
checks in the boot of guest/boots that runs them, with that boot's
kernel, vCPUs, CPU model, emulator and command line, KERNEL-ARGs added to
it. Prints each stage's wall time and exits with the verdict: 0 pass,
1 checks failed, 2 crashed, hung or a kernel splat on the console. The
checks must all belong to one boot (kmemleak and health go with any).

  --break DIFF   apply DIFF (a diff of the patched kernel tree, -p1) for
                 this run only and take it out again when the run ends: a
                 check shown red against a broken driver (tests/breaks/)

Needs a machine the suite has set up once (scripts/install-deps.sh ran,
the cache filled); takes the cache's lock.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

BREAK=""
if [ "${1:-}" = --break ]; then
	[ -r "${2:-}" ] || die "--break wants a readable diff, got '${2:-}'"
	BREAK=$(realpath "$2")
	shift 2
fi
[ -n "${1:-}" ] || die "usage: $0 [--break DIFF] CHECK[,CHECK...] [KERNEL-ARG...]"
CHECKS=$1
shift

# The registry the checks are looked up in must be a plan (scripts/lib.sh).
why=$(plan_problem) || die "the plan: $why"

# boot_runs BOOT CHECK: whether BOOT of guest/boots runs CHECK
boot_runs() {
	case ",$(boot_checks "$1")," in
	*",$2,"*) return 0 ;;
	*) return 1 ;;
	esac
}

# The first boot that runs every named check (kmemleak and health go with
# any): skip_when_idle, for one, runs in two.
BOOT=
IFS=, read -r -a names <<<"$CHECKS"
for name in "${names[@]}"; do
	[ -n "$(for b in $(boot_names); do boot_runs "$b" "$name" && echo "$b"; done)" ] ||
		die "no boot in guest/boots runs a check named '$name'"
done
for b in $(boot_names); do
	for name in "${names[@]}"; do
		case $name in kmemleak | health) continue ;; esac
		boot_runs "$b" "$name" || continue 2
	done
	BOOT=$b
	break
done
[ -n "$BOOT" ] || die "no one boot runs all of $CHECKS: name checks of one boot"

KERNEL=$(boot_field "$BOOT" kernel)
EMULATOR=$(boot_field "$BOOT" emulator)
DEBUG=0
[ "$KERNEL" = test ] && DEBUG=1
export PC_KERNEL=$KERNEL

declare -a TIMES=()
# timed NAME COMMAND...: run COMMAND, remember how long it took; returns
# COMMAND's status
timed() {
	local name=$1 start=$SECONDS status=0
	shift
	"$@" || status=$?
	TIMES+=("$name $((SECONDS - start)) s")
	return "$status"
}

take_lock
START=$SECONDS
timed tree "$REPO_DIR/scripts/prepare-tree.sh"
# unbreak: take the --break diff out of the tree again (the EXIT trap)
# shellcheck disable=SC2317
unbreak() {
	patch -d "$TREE_DIR" -p1 -R -s --no-backup-if-mismatch <"$BREAK" ||
		echo "ERROR: could not take $BREAK out of $TREE_DIR: run scripts/prepare-tree.sh" >&2
}
if [ -n "$BREAK" ]; then
	patch -d "$TREE_DIR" -p1 --forward -s --dry-run <"$BREAK" >/dev/null ||
		die "$BREAK does not apply to the patched tree"
	patch -d "$TREE_DIR" -p1 --forward -s --no-backup-if-mismatch <"$BREAK"
	trap unbreak EXIT
	stage "tree: $BREAK applied for this run"
fi
timed "kernel ($KERNEL)" "$REPO_DIR/scripts/build-kernel.sh"
if [ "$EMULATOR" = package ]; then
	timed emulator "$REPO_DIR/scripts/build-emulator.sh"
fi
timed rootfs "$REPO_DIR/scripts/build-rootfs.sh"

CONSOLE=$LOG_DIR/console-check.log
verdict=0
stage "guest: boot $BOOT, checks $CHECKS"
timed guest "$REPO_DIR/run-qemu.sh" --mode test --emulator "${EMULATOR:-stock}" \
	--smp "$(boot_field "$BOOT" smp)" --cpu "$(boot_field "$BOOT" cpu)" \
	--timeout "$(boot_field "$BOOT" timeout)" --log "$CONSOLE" \
	--append "pc.checks=$CHECKS pc.debug=$DEBUG $(boot_field "$BOOT" append) $*" ||
	verdict=$?

echo
printf '    %s\n' "${TIMES[@]}"
python3 "$REPO_DIR/scripts/ktap-parse.py" --name "$BOOT" --expect "$CHECKS" \
	"$LOG_DIR/ktap-check.log" | tail -n 1 || true
echo "check.sh: $CHECKS in boot $BOOT: verdict $verdict in $((SECONDS - START)) s (console $CONSOLE)"
exit "$verdict"
