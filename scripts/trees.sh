#!/usr/bin/env bash
# The mainline trees' command (not part of the suite): for each tree named
# (7.3, 6.12), install its pinned source, then build and boot the in-tree
# driver in each variant and judge guest/boots-trees' checks; 6.1 names
# this project's driver (its patched variant only, unless asked), so that
# one run puts the three side by side:
#   pristine   the tree as Debian ships it (PC_UNPATCHED=all)
#   unpatched  trees/<tree>/series without its patches to kernel/ (the
#              driver fixes, not the accounting fix; PC_UNPATCHED=1)
#   patched    trees/<tree>/series whole
# Each variant's console and KTAP land in out/trees/<tree>-<variant>/. Exits
# 0 when every patched variant passed; the others are expected to show the
# defects the series fixes, and their verdicts are printed, not counted.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/trees.sh [--variants "pristine unpatched patched"] TREE...

Build and boot the in-tree intel_powerclamp of each mainline TREE (7.3,
6.12) on the emulated package, as Debian ships it and with the tree's
series (trees/TREE/), and judge it with guest/boots-trees' checks. TREE
6.1 is this project's 6.1 driver and series (patches/), booted and judged
the same way, for the figures side by side in one run.
Logs: out/trees/TREE-VARIANT/. Runs as root (apt, debootstrap).

  --variants LIST  which of pristine, unpatched, patched to run
                   (default: all three for 7.3 and 6.12, patched for 6.1)
  -h, --help       this text
EOF
}

VARIANTS=
TREES=()
while (($#)); do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--variants) VARIANTS=${2:?--variants wants a list}; shift 2 ;;
	-*) echo "trees.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*) TREES+=("$1"); shift ;;
	esac
done
((${#TREES[@]})) || { usage >&2; exit 2; }

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

for tree in "${TREES[@]}"; do
	[ "$tree" = 6.1 ] || [ -d "$REPO_DIR/trees/$tree" ] ||
		die "no tree '$tree' (6.1, or trees/: 6.12 and 7.3)"
done
for variant in ${VARIANTS:-patched}; do
	case "$variant" in pristine | unpatched | patched) ;;
	*) die "a variant is pristine, unpatched or patched, not '$variant'" ;;
	esac
done

"$REPO_DIR/scripts/preflight.sh"
take_lock
# Every check of the trees' one boot, in its order.
CHECKS=$(BOOTS=$REPO_DIR/guest/boots-trees boot_checks mainline)
declare -a RESULTS=()
status=0
for tree in "${TREES[@]}"; do
	PC_TREE=$tree "$REPO_DIR/scripts/install-deps.sh"
	PC_TREE=$tree "$REPO_DIR/scripts/build-emulator.sh"
	variants=${VARIANTS:-pristine unpatched patched}
	[ "$tree" = 6.1 ] && variants=${VARIANTS:-patched}
	for variant in $variants; do
		case "$variant" in
		pristine) unpatched=all ;;
		unpatched) unpatched=1 ;;
		patched) unpatched=0 ;;
		esac
		stage "tree $tree, $variant"
		logs=$LOG_DIR/trees/$tree-$variant
		mkdir -p "$logs"
		verdict=0
		PC_TREE=$tree PC_UNPATCHED=$unpatched PC_BOOTS=$REPO_DIR/guest/boots-trees \
			POWERCLAMP_LOGS=$logs "$REPO_DIR/scripts/check.sh" "$CHECKS" ||
			verdict=$?
		RESULTS+=("$tree $variant: verdict $verdict ($logs)")
		if [ "$variant" = patched ] && ((verdict != 0)); then
			status=1
		fi
	done
done
echo
printf '    %s\n' "${RESULTS[@]}"
exit "$status"
