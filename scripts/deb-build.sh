#!/bin/bash
# The patched kernel as Debian packages: the "deb" kernel (the kernel
# without debug options plus config-fragments/variants/deb.config, what a
# Debian system booted from these packages needs: an initramfs, systemd)
# built with make bindeb-pkg into linux-image and linux-headers packages,
# as a Debian administrator or packager would build a kernel of their own.
# scripts/deb-guest.sh installs them in a Debian 12 guest and boots it.
#
# The tree and the configuration come from the harness's own stages
# (prepare-tree.sh, build-kernel.sh with PC_KERNEL=deb: the config merge
# and its check, then bzImage and the modules), so that bindeb-pkg, in the
# same build folder, only links again what its package version changes.
# The packages land in the cache (DEB_DIR in scripts/lib.sh: debs/).
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/deb-build.sh

Builds the patched kernel as Debian packages: the "deb" kernel (bench's
configuration plus config-fragments/variants/deb.config: an initramfs and
what systemd needs) with make bindeb-pkg, into linux-image-RELEASE and
linux-headers-RELEASE (and linux-libc-dev) .deb files in the cache's
debs/ folder, and prints their paths. RELEASE is the kernel's release,
6.1.N-powerclamp (CONFIG_LOCALVERSION of base.config); the package
version is the source's Debian version plus +powerclamp and the number of
patches in series (6.1.N-R+powerclamp13). Sets the machine up first as
scripts/demo.sh does (root, apt, the patched tree, the cache's lock).
scripts/deb-guest.sh installs the packages in a Debian 12 guest. Takes no
arguments.

Environment: JOBS (make -j, default 2), KDEB_PKGVERSION (another package
version), POWERCLAMP_CACHE.
EOF
export PC_KERNEL=deb
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

[ "${PC_UNPATCHED:-0}" = 0 ] || die "PC_UNPATCHED is not for the package route: it builds the whole series"
export JOBS=${JOBS:-2}
ARCH_DEB=$(dpkg --print-architecture)
# The patches of the series, counted into the package version
PATCH_COUNT=$(grep -cv '^[[:space:]]*\(#\|$\)' "$SERIES_FILE" || true)
DEB_VERSION=${KDEB_PKGVERSION:-$SRC_VERSION+powerclamp$PATCH_COUNT}
# mkdebian's source package name, which names the .changes and .buildinfo
SOURCE_NAME=linux-powerclamp

# dpkg-buildpackage writes into the folder above the build folder ("..")
UP_DIR=${OBJ_DIR%/*}

# packages RELEASE: the .deb files bindeb-pkg makes for RELEASE
packages() {
	printf '%s\n' \
		"$UP_DIR/linux-image-${1}_${DEB_VERSION}_$ARCH_DEB.deb" \
		"$UP_DIR/linux-headers-${1}_${DEB_VERSION}_$ARCH_DEB.deb" \
		"$UP_DIR/linux-libc-dev_${DEB_VERSION}_$ARCH_DEB.deb"
}

# records: dpkg-buildpackage's .buildinfo and .changes of this version
records() {
	find "$UP_DIR" -maxdepth 1 -type f \( -name "${SOURCE_NAME}_${DEB_VERSION}_*.buildinfo" \
		-o -name "${SOURCE_NAME}_${DEB_VERSION}_*.changes" \)
}

# build_debs RELEASE: make bindeb-pkg in the kernel's build folder.
# LOCALVERSION is set, and empty, so that the release is the one the
# configuration names (no "+" for a tree without git); the changelog's
# distribution is given so that mkdebian need not ask lsb_release.
build_debs() {
	local log=$OBJ_DIR.deb.log start=$SECONDS f
	stage "debs: make bindeb-pkg ($1, version $DEB_VERSION, -j$JOBS, ccache)"
	while IFS= read -r f; do rm -f "$f"; done < <(packages "$1"; records)
	if ! with_heartbeat "$log" make -C "$TREE_DIR" O="$OBJ_DIR" CC="ccache gcc" \
		-j"$JOBS" LOCALVERSION= KDEB_PKGVERSION="$DEB_VERSION" \
		KDEB_SOURCENAME="$SOURCE_NAME" KDEB_CHANGELOG_DIST=bookworm bindeb-pkg; then
		grep -E 'error|Error|unmet|dpkg-' "$log" | head -40 || true
		die "make bindeb-pkg failed (full log: $log)"
	fi
	info "built in $((SECONDS - start))s, log in $log"
}

# collect RELEASE: the packages into DEB_DIR, checked to hold the kernel,
# its modules and the driver
collect() {
	local f image=$DEB_DIR/linux-image-${1}_${DEB_VERSION}_$ARCH_DEB.deb contents
	rm -rf "$DEB_DIR"
	mkdir -p "$DEB_DIR"
	while IFS= read -r f; do
		[ -f "$f" ] || die "make bindeb-pkg did not write $f"
		mv "$f" "$DEB_DIR/"
	done < <(packages "$1")
	while IFS= read -r f; do mv "$f" "$DEB_DIR/"; done < <(records)
	contents=$(dpkg-deb -c "$image")
	grep -q " \./boot/vmlinuz-$1\$" <<<"$contents" ||
		die "$image holds no /boot/vmlinuz-$1"
	grep -q "/lib/modules/$1/kernel/drivers/thermal/intel/intel_powerclamp\.ko\$" <<<"$contents" ||
		die "$image holds no intel_powerclamp module"
}

"$REPO_DIR/scripts/preflight.sh"
take_lock
"$REPO_DIR/scripts/install-deps.sh"
"$REPO_DIR/scripts/prepare-tree.sh"
"$REPO_DIR/scripts/build-kernel.sh"
RELEASE=$(cat "$OBJ_DIR/include/config/kernel.release")
build_debs "$RELEASE"
collect "$RELEASE"
stage "debs: $RELEASE, version $DEB_VERSION, in $DEB_DIR"
for deb in "$DEB_DIR"/*.deb; do
	info "$deb ($(du -h "$deb" | cut -f1))"
done
