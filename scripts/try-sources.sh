#!/usr/bin/env bash
# Maintenance: try the series against every linux-source-6.1 the archive
# offers (or the versions named), newest first, and print per version
# whether every patch applies cleanly, with offsets or fuzz, or fails, and
# with --build whether the files the series touches build with the test
# config. Nothing here changes the pinned version (source-version) or the
# cached tree; the packages are downloaded, not installed.
#
# usage: scripts/try-sources.sh [--build] [VERSION...]
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --build ARGS -- "$@" <<'EOF'
usage: scripts/try-sources.sh [--build] [VERSION...]

Maintenance: tries the series against every linux-source-6.1 version the
archive offers (or the VERSIONs named), newest first, and prints per
version whether quilt push -a applies every patch cleanly, with offsets
or fuzz, or fails (and at which patch). The packages are downloaded into
the cache (apt-get download), never installed; source-version and the
cached tree are left alone.

  --build   also build the directories the series touches, with the test
            kernel's config (scripts/build-kernel.sh made it)
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

BUILD=0
VERSIONS=()
while (($#)); do
	case "$1" in
	--build) BUILD=1; shift ;;
	-*) die "unknown option: $1" ;;
	*) VERSIONS+=("$1"); shift ;;
	esac
done
WORK=$CACHE_DIR/try-sources
JOBS=${JOBS:-$(nproc)}
mapfile -t PATCHES < <(grep -v '^\s*\(#\|$\)' "$REPO_DIR/series")

# Paths inside the tree that the patches name on their ---/+++ lines.
touched_files() {
	(cd "$REPO_DIR/patches" &&
		sed -n 's@^\(---\|+++\) [ab]/\([^[:space:]]*\).*@\2@p' "${PATCHES[@]}") | sort -u
}

# tarball VERSION: the path of that version's source tarball, downloading
# and unpacking its package into the cache when it is not the installed one
tarball() {
	local v=$1 dir=$WORK/debs/$1 deb
	if [ "$(installed_version "$SRC_PACKAGE")" = "$v" ]; then
		echo "$SRC_TARBALL"
		return
	fi
	if [ ! -f "$dir/src.tar.xz" ]; then
		mkdir -p "$dir"
		(cd "$dir" && apt-get download -q "$SRC_PACKAGE=$v" >/dev/null 2>&1) ||
			return 1
		deb=$(ls "$dir"/*.deb)
		dpkg-deb --fsys-tarfile "$deb" |
			tar -xO "./usr/src/$SRC_PACKAGE.tar.xz" >"$dir/src.tar.xz"
		rm -f "$deb"
	fi
	echo "$dir/src.tar.xz"
}

# extract TARBALL DIR [FILES...]: the whole tree, or only FILES of it
extract() {
	local src=$1 dir=$2 top
	shift 2
	rm -rf "$dir"
	mkdir -p "$dir"
	top=$(basename "$SRC_TARBALL" .tar.xz)
	tar -xJf "$src" -C "$dir" --strip-components=1 "${@/#/$top/}" 2>/dev/null || true
}

# apply DIR: quilt push -a with quilt's default fuzz, classified from its log
apply() {
	local log=$1/.push.log n
	if ! (cd "$1" && QUILT_PATCHES=$REPO_DIR/patches QUILT_SERIES=$REPO_DIR/series \
		quilt push -a >"$log" 2>&1); then
		echo "fails at $(grep -o 'patch [^ ]*\.patch' "$log" | tail -n 1 | cut -d' ' -f2)"
		return 1
	fi
	n=$(grep -c 'with fuzz' "$log" || true)
	if ((n)); then echo "fuzz in $n hunks"; return 0; fi
	n=$(grep -c 'offset' "$log" || true)
	if ((n)); then echo "offsets in $n hunks"; return 0; fi
	echo "clean"
}

# build DIR: the directories of the touched C files, with the test config
build() {
	local obj=$1.obj targets
	[ -f "$OBJ_DIR/.config" ] || { echo "no test config (run build-kernel.sh)"; return 1; }
	mkdir -p "$obj"
	cp "$OBJ_DIR/.config" "$obj/.config"
	mapfile -t targets < <(touched_files | grep '\.c$' | xargs -n1 dirname | sort -u | sed 's|$|/|')
	if make -C "$1" O="$obj" CC="ccache gcc" -j"$JOBS" olddefconfig "${targets[@]}" \
		>"$1.build.log" 2>&1; then
		echo "builds"
	else
		echo "does not build (log: $1.build.log)"
		return 1
	fi
}

if ((${#VERSIONS[@]} == 0)); then
	mapfile -t VERSIONS < <(apt-cache madison "$SRC_PACKAGE" | awk '{ print $3 }' | sort -Vr -u)
fi
((${#VERSIONS[@]})) || die "the archive offers no $SRC_PACKAGE (apt-get update?)"

stage "try-sources: ${#PATCHES[@]} patches against ${#VERSIONS[@]} versions of $SRC_PACKAGE (pinned: $SRC_VERSION)"
mapfile -t FILES < <(touched_files)
results=()
for v in "${VERSIONS[@]}"; do
	tree=$WORK/tree-$v applied="" built="-"
	if ! src=$(tarball "$v"); then
		results+=("$(printf '%-12s %-24s %s' "$v" "cannot download" "-")")
		continue
	fi
	if ((BUILD)); then extract "$src" "$tree"; else extract "$src" "$tree" "${FILES[@]}"; fi
	if applied=$(apply "$tree") && ((BUILD)); then
		built=$(build "$tree") || true
	fi
	results+=("$(printf '%-12s %-24s %s' "$v" "$applied" "$built")")
	info "${results[-1]}"
	rm -rf "$tree" "$tree.obj"
done
printf '\n%-12s %-24s %s\n' version "quilt push -a" build
printf '%s\n' "${results[@]}"
