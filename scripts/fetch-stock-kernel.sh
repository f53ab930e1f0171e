#!/usr/bin/env bash
# Fetch Debian's stock 6.1 kernel (the package linux-image-amd64 points to)
# and make an initramfs that lets it boot the benchmark's rootfs image: the
# stock kernel has virtio and ext4 as modules. Nothing is installed on the
# host: the packages are downloaded and unpacked into the cache.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/fetch-stock-kernel.sh

Fetches Debian's stock 6.1 kernel (the package linux-image-amd64 points
to) with apt-get download, unpacks it into the cache (stock/) and makes
an initramfs with which it boots the benchmark's root file system image.
Nothing is installed on the host. scripts/benchmark.sh runs it. Takes no
arguments.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# The modules the initramfs loads: those that mount the root, then those
# that read an Intel package (the benchmark's --package figures: the msr
# device, RAPL energy and the package thermal zone), which fail to bind,
# harmlessly, on Debian's QEMU.
ROOT_MODULES=(virtio_pci virtio_blk ext4 msr intel_rapl_msr x86_pkg_temp_thermal)

image_package() {
	apt-cache depends linux-image-amd64 |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.1\./ { print $2; exit }'
}

# unpack PACKAGE DIR: download PACKAGE's .deb and unpack it into DIR
unpack() {
	local tmp
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -q "$1" >/dev/null 2>&1) ||
		die "apt-get download $1 failed (run apt-get update?)"
	dpkg-deb -x "$tmp"/*.deb "$2"
	rm -rf "$tmp"
}

# The modules of ROOT_MODULES and theirs, in load order, as paths below $1.
root_module_paths() {
	local mod
	for mod in "${ROOT_MODULES[@]}"; do
		modprobe -d "$1" -S "$2" --show-depends "$mod" | awk '$1 == "insmod" { print $2 }'
	done | awk '!seen[$0]++' | sed "s|^$1/||"
}

make_initramfs() {
	local root=$1 version=$2 dir=$STOCK_DIR/initramfs path
	rm -rf "$dir"
	mkdir -p "$dir/bin" "$dir/lib/modules" "$dir/newroot" "$dir/dev" "$dir/proc"
	unpack busybox-static "$STOCK_DIR/busybox"
	cp "$STOCK_DIR/busybox/bin/busybox" "$dir/bin/busybox"
	ln -s busybox "$dir/bin/sh"
	while IFS= read -r path; do
		cp "$root/$path" "$dir/lib/modules/"
		basename "$path" >>"$dir/lib/modules/load-order"
	done < <(root_module_paths "$root" "$version")
	cp "$(find "$root/lib/modules/$version" -name intel_powerclamp.ko)" "$dir/lib/modules/stock-intel_powerclamp.ko"
	install -m 0755 "$REPO_DIR/bench/stock-initramfs-init" "$dir/init"
	(cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) >"$STOCK_INITRD.tmp"
	mv "$STOCK_INITRD.tmp" "$STOCK_INITRD"
}

main() {
	local package version root=$STOCK_DIR/image
	package=$(image_package)
	[ -n "$package" ] || die "no linux-image-6.1 package known to apt (run apt-get update)"
	version=${package#linux-image-}
	if [ -f "$STOCK_KERNEL" ] && [ "$(cat "$STOCK_DIR/version" 2>/dev/null)" = "$version" ] &&
		[ "$STOCK_INITRD" -nt "$REPO_DIR/bench/stock-initramfs-init" ] &&
		[ "$STOCK_INITRD" -nt "$0" ]; then
		info "stock kernel $version cached"
		return
	fi
	stage "stock kernel: $package (download and unpack, nothing installed)"
	rm -rf "$STOCK_DIR"
	mkdir -p "$STOCK_DIR"
	unpack "$package" "$root"
	depmod -b "$root" "$version"
	cp "$root/boot/vmlinuz-$version" "$STOCK_KERNEL"
	make_initramfs "$root" "$version"
	echo "$version" >"$STOCK_DIR/version"
	info "$STOCK_KERNEL, $STOCK_INITRD"
}

main
