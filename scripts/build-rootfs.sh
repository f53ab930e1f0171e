#!/usr/bin/env bash
# Build the guest disk image: a cached debootstrap minbase rootfs, plus the
# freshly built modules, our init and the guest-side scripts, packed with
# mke2fs -d (no loop mounts).
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: [PC_KERNEL=test|bench|...] scripts/build-rootfs.sh

Builds the guest's disk image for PC_KERNEL's build: a debootstrap
--variant=minbase bookworm root file system (made once and cached, again
when its package list changes; root needed), plus the built modules, the
guest's init, the guest scripts and the controller
(tools/powerclamp-ctl), packed into an ext4 image with mke2fs -d (no loop
mounts). Takes no arguments.

Environment: PC_KERNEL (default test), DEBIAN_MIRROR (default
http://deb.debian.org/debian), POWERCLAMP_CACHE.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# linux-cpupower brings turbostat, the package C-state and RAPL reader the
# emulated-package checks hold the emulation to; thermald is the client
# that closes the thermal loop through the driver there.
INCLUDE=kmod,procps,util-linux,coreutils,linux-cpupower,thermald
STAGE_DIR=$OBJ_DIR.rootfs-stage
IMAGE_SIZE=768M

make_base() {
	stage "rootfs: debootstrap --variant=minbase $SUITE (once, cached)"
	rm -rf "$ROOTFS_BASE.tmp"
	if ! with_heartbeat "$CACHE_DIR/debootstrap.log" debootstrap \
		--variant=minbase --include="$INCLUDE" "$SUITE" \
		"$ROOTFS_BASE.tmp" "$MIRROR"; then
		tail -n 20 "$CACHE_DIR/debootstrap.log"
		die "debootstrap failed"
	fi
	rm -rf "$ROOTFS_BASE.tmp/var/cache/apt/archives"/*.deb
	rm -rf "$ROOTFS_BASE"
	mv "$ROOTFS_BASE.tmp" "$ROOTFS_BASE"
	echo "$INCLUDE" >"$ROOTFS_BASE.include"
}

make_image() {
	stage "rootfs: image with modules and guest scripts"
	rm -rf "$STAGE_DIR"
	cp -a "$ROOTFS_BASE" "$STAGE_DIR"
	make -s -C "$TREE_DIR" O="$OBJ_DIR" INSTALL_MOD_PATH="$STAGE_DIR" \
		modules_install >/dev/null
	install -m 0755 "$REPO_DIR/test-rootfs/init" "$STAGE_DIR/sbin/pc-init"
	install -d "$STAGE_DIR/pc/checks"
	install -m 0755 "$REPO_DIR/guest/run-checks.sh" "$STAGE_DIR/pc/run-checks.sh"
	install -m 0644 "$REPO_DIR/lib/ktap.sh" "$REPO_DIR/guest/lib.sh" "$STAGE_DIR/pc/"
	install -m 0644 "$REPO_DIR"/guest/checks/*.sh "$STAGE_DIR/pc/checks/"
	install -m 0644 "$REPO_DIR/guest/thermald/thermal-conf.xml" \
		"$STAGE_DIR/etc/thermald/thermal-conf.xml"
	install -m 0755 "$REPO_DIR/test-rootfs/demo.sh" "$STAGE_DIR/demo.sh"
	install -m 0755 "$REPO_DIR/bench/guest-bench.sh" "$STAGE_DIR/bench.sh"
	gcc -static -O2 -Wall -Werror -o "$STAGE_DIR/usr/local/bin/pc-spin" \
		"$REPO_DIR/bench/pc-spin.c"
	local tool
	for tool in powerclamp-ctl test/pc-plant test/pc-failnth test/pc-softirq; do
		gcc -static -O2 -Wall -Wextra -Werror \
			-o "$STAGE_DIR/usr/local/bin/${tool#test/}" \
			"$REPO_DIR/tools/powerclamp-ctl/$tool.c" -lm
	done
	rm -f "$IMAGE"
	mke2fs -q -t ext4 -L pc-root -d "$STAGE_DIR" "$IMAGE" "$IMAGE_SIZE"
	info "$IMAGE ($(du -sh "$STAGE_DIR" | cut -f1) of files)"
}

# Made again when the list of packages changes
[ "$(cat "$ROOTFS_BASE.include" 2>/dev/null)" = "$INCLUDE" ] || make_base
make_image
