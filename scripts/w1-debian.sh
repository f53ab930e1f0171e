#!/usr/bin/env bash
# Compile every object the series changes under Debian's own amd64
# configuration (linux-config-6.1, config.amd64_none_amd64: NO_HZ_FULL,
# VIRT_CPU_ACCOUNTING_GEN, PREEMPT_DYNAMIC, ...) with W=1, once as Debian
# ships it and once with IRQ_TIME_ACCOUNTING on, and fail on any warning.
# The guests' kernels are tinyconfig-based; this is where the distro's
# options meet the patched code. Compile only: nothing is linked or booted.
#
# usage: scripts/w1-debian.sh
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/w1-debian.sh

Compiles every object the series changes under Debian's own amd64
configuration (linux-config-6.1, config.amd64_none_amd64) with W=1, once
as Debian ships it and once with IRQ_TIME_ACCOUNTING on, and fails on any
warning. Compile only: nothing is linked or booted. Needs the patched
tree (scripts/prepare-tree.sh) and linux-config-6.1
(scripts/install-deps.sh). Takes no arguments.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

DEBIAN_CONFIG=/usr/src/$CONFIG_PACKAGE/config.amd64_none_amd64.xz
W1_DIR=$CACHE_DIR/obj-debian-w1
JOBS=${JOBS:-$(nproc)}

# touched_objects: the objects that compile the series' C files (a file
# the scheduler builds inside one of its build_*.c units counts as that)
touched_objects() {
	local f unit
	for f in $(quilt_with "$REPO_DIR/patches" "$REPO_DIR/series" files -a |
		grep '\.c$' | sort -u); do
		unit=$(cd "$TREE_DIR" && grep -l "#include \"$(basename "$f")\"" \
			"$(dirname "$f")"/build_*.c 2>/dev/null | head -n 1) || true
		f=${unit:-$f}
		# a file #included by another of the series (the KUnit cases)
		# is compiled with it
		if (cd "$TREE_DIR" && grep -q "#include \"$(basename "$f")\"" \
			"$(dirname "$f")"/*.c 2>/dev/null); then
			continue
		fi
		echo "${f%.c}.o"
	done | sort -u
}

# config_w1 EXTRA...: Debian's configuration plus EXTRA (scripts/config
# arguments), made whole with olddefconfig; fails if an option asked for
# did not survive
config_w1() {
	local want opt
	mkdir -p "$W1_DIR"
	xz -dc "$DEBIAN_CONFIG" >"$W1_DIR/.config"
	# Debian's signing keys are not here, debug information only slows
	# the compiler, and the KUnit cases are compiled too
	"$TREE_DIR/scripts/config" --file "$W1_DIR/.config" \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
		-d MODULE_SIG -d DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT -e DEBUG_INFO_NONE \
		-e KUNIT -m INTEL_POWERCLAMP_KUNIT_TEST "$@"
	make -s -C "$TREE_DIR" O="$W1_DIR" olddefconfig >/dev/null
	for want in NO_HZ_FULL=y VIRT_CPU_ACCOUNTING_GEN=y PREEMPT_DYNAMIC=y \
		INTEL_POWERCLAMP=m KUNIT=y INTEL_POWERCLAMP_KUNIT_TEST=m; do
		grep -qx "CONFIG_$want" "$W1_DIR/.config" ||
			die "CONFIG_$want did not survive olddefconfig"
	done
	for opt in "$@"; do
		[ "$opt" = -e ] && continue
		grep -qx "CONFIG_$opt=y" "$W1_DIR/.config" ||
			die "CONFIG_$opt did not survive olddefconfig"
	done
}

# compile_w1 NAME OBJECTS...: compile OBJECTS with W=1; fails on a warning
compile_w1() {
	local name=$1 log=$W1_DIR.$1.log warnings
	shift
	stage "W=1 under Debian's config ($name): $*"
	if ! make -C "$TREE_DIR" O="$W1_DIR" CC="ccache gcc" -j"$JOBS" W=1 "$@" \
		>"$log" 2>&1; then
		tail -n 30 "$log"
		die "compilation failed ($name), log in $log"
	fi
	# the compiler's, on C files and headers (bison's own about genksyms'
	# grammar are not the series' business)
	warnings=$(grep -E '\.[ch]:[0-9]+:([0-9]+:)? warning:' "$log" || true)
	if [ -n "$warnings" ]; then
		echo "$warnings"
		die "W=1 warnings under Debian's config ($name), log in $log"
	fi
	info "no warning ($name)"
}

take_lock
[ "$(installed_version "$CONFIG_PACKAGE")" = "$SRC_VERSION" ] ||
	die "$CONFIG_PACKAGE $SRC_VERSION is not installed (run scripts/install-deps.sh)"
"$REPO_DIR/scripts/prepare-tree.sh"
mapfile -t OBJECTS < <(touched_objects)
((${#OBJECTS[@]})) || die "the series changes no C file?"

config_w1
compile_w1 debian "${OBJECTS[@]}"
config_w1 -e IRQ_TIME_ACCOUNTING
compile_w1 irq-time "${OBJECTS[@]}"
echo "w1-debian: ${#OBJECTS[@]} objects, no warning under Debian's config, with and without IRQ_TIME_ACCOUNTING"
