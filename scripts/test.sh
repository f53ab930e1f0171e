#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install what is
# missing, lint the series, apply it, build the kernels and the rootfs,
# prove the harness can fail (tests/run.sh), boot every guest of
# guest/boots under QEMU, run the cheap breaks of tests/breaks/ red again,
# build the newest mainline tree's kernel and boot its checks
# (guest/boots-trees), and judge what each printed.
# Ends with the line
# "N passed, N failed, N skipped" and exits non-zero on any failure or
# kernel splat.
#
# The results of lint, analysis, the host self-tests and every guest come
# from their KTAP documents, parsed by scripts/ktap-parse.py, never from a
# producer's own tally; bisect and export are one result each, and each
# boot adds its console scan and its verdict (scripts/verdict.sh). The
# documents this run owes are listed before anything runs; one that never
# reports (a stage died first) is a failure. The registry of boots is held
# to its floor first (plan_problem), so that it cannot shrink unseen.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/test.sh

The whole test suite, from a fresh Debian 12 machine, as root: installs
what is missing (apt), lints the series, applies it, builds the kernels,
the emulated-package QEMU and the guests' images, proves the harness can
fail (tests/run.sh), boots every guest of guest/boots under QEMU, runs
the cheap breaks of tests/breaks/ and expects their checks red
(scripts/breaks.sh --ci), builds the 7.3 tree's kernel (trees/) and boots its checks of
its in-tree driver (guest/boots-trees), and judges the KTAP document each
printed. Ends with the line
"N passed, N failed, N skipped" and exits non-zero on any failure or
kernel splat. Fills the cache (/var/tmp/powerclamp-cache) and takes its
lock. Takes no arguments.

Environment: POWERCLAMP_CACHE, POWERCLAMP_LOGS (instead of out/), JOBS
(make -j). See docs/testing.md.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=scripts/verdict.sh
. "$REPO_DIR/scripts/verdict.sh"

current="start"
timings=()
mapfile -t BOOT_LIST < <(boot_names)
MAINLINE_TREES=(7.3 6.12)
# The mainline trees' kernels are built in the suite, and the first tree
# (the newest) boots guest/boots-trees' checks of its in-tree driver with
# its series; every tree's other variants and boots are scripts/trees.sh's.
BOOT_TREE=${MAINLINE_TREES[0]}
TREE_BOOTS=$REPO_DIR/guest/boots-trees
DOCUMENTS=(lint "${MAINLINE_TREES[@]/#/lint-}" analysis w1-debian bisect export harness emulator "${BOOT_LIST[@]}"
	breaks "build-$BOOT_TREE" "mainline")

summary() {
	local t r
	echo
	echo "==> summary after $(($(date +%s) - PC_START_EPOCH))s"
	for t in "${timings[@]}"; do info "$t"; done
	for r in "${retries[@]}"; do info "retried: $r"; done
	echo "$passed passed, $failed failed, $skipped skipped"
}

# A stage that stops the run (patch does not apply, build breaks) is a
# failure, and so is every document it kept from reporting.
on_exit() {
	local rc=$? doc
	[ "$current" = "done" ] && return
	fail_line "stage '$current' failed (exit $rc)"
	for doc in "${DOCUMENTS[@]}"; do
		[ -n "${reported[$doc]:-}" ] || fail_line "$doc: never reported (the run stopped first)"
	done
	summary
	exit 1
}
trap on_exit EXIT

# timed NAME COMMAND...: run a stage and keep its wall time for the summary
timed() {
	local name=$1 t0=$SECONDS rc=0
	shift
	current=$name
	"$@" || rc=$?
	timings+=("$(printf '%-34s %5ss' "$name" "$((SECONDS - t0))")")
	return "$rc"
}

mkdir -p "$LOG_DIR"
echo "# documents this run reports: ${DOCUMENTS[*]}"
# The plan before anything is built: a registry of boots that is missing,
# empty or below its floor would boot less and could still come out green.
current="plan"
why=$(plan_problem) || { fail_line "plan: $why"; exit 1; }
why=$(BOOTS=$TREE_BOOTS plan_problem) || { fail_line "plan: $why"; exit 1; }
timed preflight "$REPO_DIR/scripts/preflight.sh"
take_lock
timed deps "$REPO_DIR/scripts/install-deps.sh"
timed tree "$REPO_DIR/scripts/prepare-tree.sh"
timed lint ktap_stage lint "$REPO_DIR/scripts/lint.sh"
# The mainline trees' series (trees/): each installs its pinned Debian
# source, applies to it with no fuzz or offset, and passes that tree's
# checkpatch and the mail header check. Their kernels are built and one
# is booted at the end of the run (below).
lint_tree() {
	PC_TREE=$1 "$REPO_DIR/scripts/install-deps.sh" &&
		PC_TREE=$1 "$REPO_DIR/scripts/prepare-tree.sh" &&
		PC_TREE=$1 "$REPO_DIR/scripts/lint.sh"
}
for tree in "${MAINLINE_TREES[@]}"; do
	timed "tree $tree: source, series, lint" ktap_stage "lint-$tree" lint_tree "$tree"
done
timed "harness self-tests" ktap_stage harness "$REPO_DIR/tests/run.sh"
timed "kernel build" "$REPO_DIR/scripts/build-kernel.sh"
timed "driver analysis" ktap_stage analysis "$REPO_DIR/scripts/analyze-driver.sh"
timed "W=1, Debian's config" single w1-debian \
	"the series' objects compile without a W=1 warning under Debian's config" \
	"$REPO_DIR/scripts/w1-debian.sh"

# Series-level checks that need the built config: each patch builds on its
# own, and the exported mails apply with git am. Bisecting re-applies the
# series, so the kernel is brought up to date again afterwards (seconds).
timed bisect single bisect "every patch of the series builds on its own" \
	"$REPO_DIR/scripts/bisect-build.sh"
timed export single export "exported series applies with git am to a pristine tree" \
	"$REPO_DIR/scripts/export-series.sh"
timed "kernel build (after bisect)" "$REPO_DIR/scripts/build-kernel.sh"
timed "emulator build" "$REPO_DIR/scripts/build-emulator.sh"
timed "emulator checks" ktap_stage emulator "$REPO_DIR/scripts/test-emulator.sh"
timed rootfs "$REPO_DIR/scripts/build-rootfs.sh"
timed "kernel build (no debug options)" env PC_KERNEL=bench "$REPO_DIR/scripts/build-kernel.sh"
timed "rootfs (no debug options)" env PC_KERNEL=bench "$REPO_DIR/scripts/build-rootfs.sh"

for boot in "${BOOT_LIST[@]}"; do
	timed "guest: $boot" run_boot "$boot"
done
# The red runs again: each cheap break (a driver rebuild and one short
# check) must still turn its check red, or that check can no longer catch
# what it was written for. check.sh takes each break out after its run.
timed "breaks (red on purpose)" ktap_stage breaks "$REPO_DIR/scripts/breaks.sh" --ci

# build_tree TREE: the tree's kernel without debug options, with its whole
# series (the kernel guest/boots-trees boots). Only the booted tree's: the
# other trees' series are applied and linted above, and built patch by
# patch by scripts/bisect-build.sh (PC_TREE=6.12 PC_KERNEL=bench) outside
# the suite, which has no room for another kernel build in its 75 minutes.
build_tree() {
	PC_TREE=$1 PC_KERNEL=bench "$REPO_DIR/scripts/build-kernel.sh"
}
timed "tree $BOOT_TREE: kernel (no debug options)" single "build-$BOOT_TREE" \
	"the $BOOT_TREE tree builds with its series (trees/$BOOT_TREE)" build_tree "$BOOT_TREE"
timed "tree $BOOT_TREE: rootfs" env PC_TREE="$BOOT_TREE" PC_KERNEL=bench \
	"$REPO_DIR/scripts/build-rootfs.sh"
# run_boot reads the boot from $BOOTS and boots the tree's kernel through
# run-qemu.sh, which takes PC_TREE from the environment.
PC_TREE=$BOOT_TREE BOOTS=$TREE_BOOTS timed "guest: mainline ($BOOT_TREE)" run_boot mainline

current="done"
summary
((failed == 0))
