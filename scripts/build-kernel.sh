#!/usr/bin/env bash
# Configure (tinyconfig + config-fragments/*.config) and build bzImage and
# modules out of tree with ccache. Fails if a requested option is missing.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: [PC_KERNEL=test|bench|kcsan|debian|debian-debug|rt|deb] scripts/build-kernel.sh

Configures the kernel (make tinyconfig, then config-fragments/*.config
merged on top: debug.config for the test kernel only, the variant's
fragment for kcsan, debian, debian-debug, rt and deb) and builds bzImage
and the modules out of tree (make O=, in the cache) with ccache. Fails if
an option a fragment asks for did not survive. Needs the patched tree
(scripts/prepare-tree.sh). Takes no arguments.

Environment: PC_KERNEL (default test), PC_UNPATCHED=1 (the tree without
the accounting patches), POWERCLAMP_CACHE, JOBS (make -j, default nproc).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-$(nproc)}
KMAKE=(make -C "$TREE_DIR" O="$OBJ_DIR" CC="ccache gcc" -j"$JOBS")
FRAGMENTS=()
for fragment in "$REPO_DIR"/config-fragments/*.config; do
	[ "$PC_KERNEL" != test ] && [ "${fragment##*/}" = debug.config ] && continue
	FRAGMENTS+=("$fragment")
done
# A mainline tree's own fragment comes last: it drops what that tree does
# not have (the 6.1 driver's KUnit suite) and says what it needs instead.
[ "$PC_TREE" = 6.1 ] || FRAGMENTS+=("$TREE_CONF/tree.config")
case "$PC_KERNEL" in
kcsan | debian | rt | deb) FRAGMENTS+=("$REPO_DIR/config-fragments/variants/$PC_KERNEL.config") ;;
debian-debug)
	FRAGMENTS+=("$REPO_DIR/config-fragments/variants/debian.config"
		"$REPO_DIR/config-fragments/variants/debian-debug.config")
	;;
esac

make_config() {
	stage "config ($PC_KERNEL kernel): tinyconfig + ${FRAGMENTS[*]##*/}"
	local tmp=$OBJ_DIR.config-tmp new=$OBJ_DIR.config-new
	rm -rf "$tmp"
	mkdir -p "$tmp"
	make -s -C "$TREE_DIR" O="$tmp" tinyconfig >/dev/null
	"$TREE_DIR/scripts/kconfig/merge_config.sh" -m -O "$tmp" \
		"$tmp/.config" "${FRAGMENTS[@]}" >/dev/null
	make -s -C "$TREE_DIR" O="$tmp" olddefconfig >/dev/null
	cp "$tmp/.config" "$new"
	check_config "$new"
	mkdir -p "$OBJ_DIR"
	if cmp -s "$new" "$OBJ_DIR/.config"; then
		info "config unchanged"
	else
		cp "$new" "$OBJ_DIR/.config"
		info "config updated"
	fi
}

# requested_lines: each symbol's CONFIG_X=v or '# CONFIG_X is not set' line
# from the last fragment that names it (merge_config.sh lets a later
# fragment override an earlier one, as the variants do base.config)
requested_lines() {
	awk '/^CONFIG_[A-Za-z0-9_]+=/ { sym = $0; sub(/=.*/, "", sym) }
	     /^# CONFIG_[A-Za-z0-9_]+ is not set$/ { sym = $2 }
	     sym != "" { if (!(sym in line)) order[n++] = sym; line[sym] = $0; sym = "" }
	     END { for (i = 0; i < n; i++) print line[order[i]] }' "${FRAGMENTS[@]}"
}

# Every CONFIG_X=v and '# CONFIG_X is not set' line of the fragments must be
# in the final config: Kconfig silently drops options whose dependencies fail.
check_config() {
	local config=$1 bad=0 line sym
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF -- "$line" "$config" || {
				echo "    missing: $line (got: $(grep "^${line%%=*}=" "$config" || echo 'not set'))"
				bad=1
			}
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }
			sym=${sym%% *}
			if grep -q "^$sym=" "$config"; then
				echo "    should be unset: $sym"
				bad=1
			fi
			;;
		esac
	done < <(requested_lines)
	((bad == 0)) || die "requested config options did not survive the merge"
	info "all requested options present"
}

build() {
	stage "build: bzImage + modules (-j$JOBS, ccache), $SRC_PACKAGE $(cat "$TREE_DIR/.source-version")"
	cp "$TREE_DIR/.source-version" "$OBJ_DIR/source-version"
	local log=$OBJ_DIR.build.log start=$SECONDS
	if ! with_heartbeat "$log" "${KMAKE[@]}" bzImage modules; then
		grep -E 'error|Error' "$log" | head -40
		die "kernel build failed (full log: $log)"
	fi
	grep -E 'warning:' "$log" | sort -u | sed 's/^/    /' || true
	info "built in $((SECONDS - start))s: $(ccache -s 2>/dev/null | grep -iE '^ *hits|cache hit \(rate\)' | head -1 | xargs)"
}

mkdir -p "$CCACHE_DIR"
ccache -M 5G >/dev/null
make_config
build
