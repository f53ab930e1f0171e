#!/usr/bin/env bash
# Check that the series is bisectable: apply it one patch at a time and
# build the objects each patch touches, in a separate output folder with the
# test config. Stops on the first patch that breaks the build. Leaves the
# whole series applied.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/bisect-build.sh

Checks that the series is bisectable: applies it one patch at a time in
the cached tree and builds the objects each patch touches, with the test
config, in an output folder of its own (obj-bisect in the cache; the log
of each build is bisect-PATCH.log there). Stops at the first patch that
does not build, and leaves the whole series applied. Needs the test
kernel configured (scripts/build-kernel.sh). Takes no arguments.

Environment: POWERCLAMP_CACHE, JOBS (make -j, default nproc).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

BISECT_OBJ=$TREE_CACHE/obj-bisect
JOBS=${JOBS:-$(nproc)}
quilt_repo() { quilt_with "$PATCHES_DIR" "$SERIES_FILE" "$@"; }

# Build targets for the files a patch touches: the object of a .c file
# that its Makefile builds, else its whole directory (kernel/sched/*.c are
# included by build_*.c); a Kconfig or Makefile change builds its
# directory. Documentation needs no build.
targets_for() {
	local f dir obj
	quilt_repo files "$1" | while read -r f; do
		dir=$(dirname "$f")
		obj=$(basename "${f%.c}").o
		case "$f" in
		*.c)
			[ -f "$TREE_DIR/$f" ] || continue
			if grep -qw -- "$obj" "$TREE_DIR/$dir/Makefile"; then
				echo "${f%.c}.o"
			else
				echo "$dir/"
			fi
			;;
		*/Kconfig | */Makefile) echo "$dir/" ;;
		esac
	done | sort -u
}

stage "bisect: building each patch of the series on its own"
mkdir -p "$BISECT_OBJ"
# the tree ends as it started, with the whole series applied: its files get
# their times back, so that the kernels built from it rebuild nothing
RECORD=$TREE_DIR.bisect-before
note_patched_files "$PATCHES_DIR" "$SERIES_FILE" "$RECORD"
quilt_repo pop -a -q >/dev/null
# on failure too, leave the whole series applied again
trap 'quilt_repo push -a -q >/dev/null 2>&1 || true; keep_unchanged_times "$RECORD"' EXIT
while read -r patch; do
	quilt_repo push -q --fuzz=0 >/dev/null
	# the test config each time: olddefconfig drops symbols a patch removes
	cp "$OBJ_DIR/.config" "$BISECT_OBJ/.config"
	mapfile -t targets < <(targets_for "$patch")
	log=$TREE_CACHE/bisect-$patch.log
	if ! make -C "$TREE_DIR" O="$BISECT_OBJ" CC="ccache gcc" -j"$JOBS" \
		olddefconfig "${targets[@]}" >"$log" 2>&1; then
		grep -E 'error|Error' "$log" | head -20
		die "the tree does not build after $patch (log: $log)"
	fi
	echo "ok - builds after $patch (${targets[*]:-nothing to build})"
done < <(grep -v '^\s*\(#\|$\)' "$SERIES_FILE")
