#!/bin/bash
# The Debian package route's guest: a Debian 12 system made with debootstrap
# (systemd, udev, initramfs-tools, thermald, ...), into which the packages of
# scripts/deb-build.sh are installed with apt as an administrator installs
# a kernel (the package's postinst makes /boot/initrd.img-RELEASE through
# initramfs-tools), configured for the emulated Intel package (thermald's
# configuration for this product, thermald.service enabled) and booted
# through its own kernel and initramfs on the emulated-package QEMU
# (docs/emulator.md). At boot powerclamp-deb-check.service runs
# guest/deb/powerclamp-deb-check.sh: thermald clamps the loaded package
# through intel_powerclamp, the guest suspends with the clamp on, the RTC
# wakes it, and the clamp works again. The script exits with the guest's
# verdict, as run-qemu.sh does.
#
# run-qemu.sh cannot boot this guest: it boots the harness's own init
# (init=/sbin/pc-init) and takes its verdict from isa-debug-exit, where
# this guest is booted as Debian boots and powers off with systemctl. The
# QEMU command line below is run-qemu.sh's otherwise.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --timeout= --boot-only -- "$@" <<'EOF'
usage: scripts/deb-guest.sh [--timeout SECONDS] [--boot-only]

Installs the packages of scripts/deb-build.sh in a Debian 12 guest and
boots it: a debootstrap --variant=minbase bookworm root (made once and
cached; systemd-sysv, udev, dbus, initramfs-tools, zstd, thermald,
linux-cpupower, util-linux, procps, e2fsprogs), the linux-image and
linux-headers packages installed in it with apt-get (their postinst makes
the initramfs), thermald configured for QEMU's q35 board and enabled, and
powerclamp-deb-check.service. The image is booted with its own
/boot/vmlinuz and /boot/initrd.img on the emulated-package QEMU
(Skylake-Client,pkg-model=on, 2 vCPUs, 2 GiB, TCG). In the guest, thermald
must clamp the loaded package through intel_powerclamp, and keep doing
so across "systemctl suspend" woken by the RTC. Prints the guest's
console, judges its KTAP document and exits with the verdict: 0 pass, 1
checks failed, 2 the guest crashed, hung, printed a kernel splat or gave
no document. Sets the machine up first (root, apt, the emulated-package
QEMU, the cache's lock).

  --timeout SECONDS  the guest still running then counts as hung
                     (default $POWERCLAMP_TIMEOUT, else 1200)
  --boot-only        boot the image made last time again

Console in out/console-deb.log, KTAP document in out/ktap-deb.log.
Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
POWERCLAMP_CACHE, POWERCLAMP_LOGS, POWERCLAMP_TIMEOUT.
EOF
export PC_KERNEL=deb
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# An administrator's minimal Debian with systemd: PID 1 and udev, dbus for
# thermald's Type=dbus unit and for logind (systemctl suspend goes through
# it), initramfs-tools with busybox and zstd as bookworm installs them,
# thermald, turbostat (linux-cpupower), rtcwake (util-linux), ps, mkfs.
INCLUDE=systemd-sysv,udev,dbus,kmod,initramfs-tools,busybox,zstd,thermald,linux-cpupower,util-linux,procps,e2fsprogs
DEB_ROOTFS=$CACHE_DIR/rootfs-deb    # that debootstrap result, made once
STAGE_DIR=$OBJ_DIR.rootfs-stage
BOOT_DIR=$OBJ_DIR.boot              # the kernel and initramfs, copied out
IMAGE_SIZE=2G
GUEST_LIB=/usr/local/lib/powerclamp-deb
DEBS_IN_GUEST=/tmp/powerclamp-debs
# What QEMU's q35 board puts in its SMBIOS tables as the product name (a
# constant of QEMU's, "guest ABI, do not change"), which the guest reads in
# /sys/class/dmi/id/product_name and thermald matches exactly.
Q35_PRODUCT='Standard PC (Q35 + ICH9, 2009)'
# The passive trip, in millidegrees. In the model (docs/emulator.md, its
# defaults) the idle package sits near 36 C and two busy vCPUs settle it
# at 35 + 0.6 x (9 + 2 x 14) = 57.2 C. 50 C lies well above the idle
# guest (the check waits for the package to be 3 C below it before it
# loads the CPUs), is crossed about 4 s after the load starts, and can be
# held within the cooling device's 50 %: the package boot's pkg_thermald
# held it at 49.5 C by clamping 30-50 %. A trip a few degrees above idle
# would pin the clamp at its 50 % without holding the temperature.
TRIP_MC=50000
SMP=2
CPU_MODEL=Skylake-Client,pkg-model=on
TIMEOUT=${POWERCLAMP_TIMEOUT:-1200}
LOG=$LOG_DIR/console-deb.log
KTAP_LOG=$LOG_DIR/ktap-deb.log

BOOT_ONLY=0
while (($#)); do
	case "$1" in
	--timeout)
		(($# >= 2)) || die "--timeout wants a number of seconds"
		TIMEOUT=$2
		shift 2
		;;
	--boot-only) BOOT_ONLY=1; shift ;;
	esac
done
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout wants a number of seconds, not '$TIMEOUT'"

# in_stage COMMAND...: COMMAND in the guest's root, with a clean environment
in_stage() {
	chroot "$STAGE_DIR" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"
}

# unmount_stage: /proc out of the guest's root (before it is copied,
# packed or removed)
unmount_stage() {
	if mountpoint -q "$STAGE_DIR/proc" 2>/dev/null; then
		umount "$STAGE_DIR/proc"
	fi
}
trap unmount_stage EXIT

# the_packages: set IMAGE_DEB, HEADERS_DEB, RELEASE and VERSION from the
# one linux-image and linux-headers package of DEB_DIR
the_packages() {
	local images=() headers=() pkg
	shopt -s nullglob
	images=("$DEB_DIR"/linux-image-*.deb)
	headers=("$DEB_DIR"/linux-headers-*.deb)
	shopt -u nullglob
	((${#images[@]} == 1 && ${#headers[@]} == 1)) ||
		die "want one linux-image and one linux-headers package in $DEB_DIR, found ${#images[@]} and ${#headers[@]} (run scripts/deb-build.sh)"
	IMAGE_DEB=${images[0]}
	HEADERS_DEB=${headers[0]}
	pkg=$(dpkg-deb -f "$IMAGE_DEB" Package)
	RELEASE=${pkg#linux-image-}
	VERSION=$(dpkg-deb -f "$IMAGE_DEB" Version)
	if [ "$(dpkg-deb -f "$HEADERS_DEB" Package)" != "linux-headers-$RELEASE" ] ||
		[ "$(dpkg-deb -f "$HEADERS_DEB" Version)" != "$VERSION" ]; then
		die "$HEADERS_DEB is not linux-headers-$RELEASE $VERSION"
	fi
}

make_base() {
	stage "guest: debootstrap --variant=minbase $SUITE with systemd and thermald (once, cached)"
	rm -rf "$DEB_ROOTFS.tmp"
	if ! with_heartbeat "$CACHE_DIR/debootstrap-deb.log" debootstrap \
		--variant=minbase --include="$INCLUDE" "$SUITE" \
		"$DEB_ROOTFS.tmp" "$MIRROR"; then
		tail -n 20 "$CACHE_DIR/debootstrap-deb.log"
		die "debootstrap failed"
	fi
	rm -rf "$DEB_ROOTFS.tmp/var/cache/apt/archives"/*.deb
	rm -rf "$DEB_ROOTFS"
	mv "$DEB_ROOTFS.tmp" "$DEB_ROOTFS"
	echo "$INCLUDE" >"$DEB_ROOTFS.include"
}

# install_kernel: a copy of the debootstrap root, set up as an installer
# leaves a system, with the packages installed by apt-get
install_kernel() {
	stage "guest: apt-get install linux-image-$RELEASE and linux-headers-$RELEASE $VERSION"
	unmount_stage
	rm -rf "$STAGE_DIR"
	cp -a "$DEB_ROOTFS" "$STAGE_DIR"
	# The root file system in fstab, as the installer writes it: the
	# initramfs' fsck hook and systemd's remount of the root read it. No
	# resume device: initramfs-tools would otherwise pick this host's swap
	# and the guest's boot wait for it.
	echo '/dev/vda / ext4 errors=remount-ro 0 1' >"$STAGE_DIR/etc/fstab"
	echo pc-deb >"$STAGE_DIR/etc/hostname"
	mkdir -p "$STAGE_DIR/etc/initramfs-tools/conf.d"
	echo RESUME=none >"$STAGE_DIR/etc/initramfs-tools/conf.d/resume"
	mkdir -p "$STAGE_DIR$DEBS_IN_GUEST"
	install -m 0644 "$IMAGE_DEB" "$HEADERS_DEB" "$STAGE_DIR$DEBS_IN_GUEST/"
	mount -t proc proc "$STAGE_DIR/proc"
	# a system booted once has a machine ID; without one, systemd's first
	# boot would ask on the console for a locale and a time zone
	grep -qx '[0-9a-f]\{32\}' "$STAGE_DIR/etc/machine-id" 2>/dev/null ||
		in_stage systemd-machine-id-setup >/dev/null
	# (apt-get takes a package file by a path with a slash: ./NAME.deb)
	# shellcheck disable=SC2016  # expanded by the guest's sh
	if ! with_heartbeat "$OBJ_DIR.install.log" in_stage sh -c \
		'cd "$1" && shift && exec apt-get install -y "$@"' sh "$DEBS_IN_GUEST" \
		"./${IMAGE_DEB##*/}" "./${HEADERS_DEB##*/}"; then
		tail -n 30 "$OBJ_DIR.install.log"
		die "apt-get install of the kernel packages failed (log: $OBJ_DIR.install.log)"
	fi
	unmount_stage
	rm -rf "$STAGE_DIR$DEBS_IN_GUEST"
	grep -E '^(update-initramfs|W:|E:)' "$OBJ_DIR.install.log" | sed 's/^/    /' || true
	[ -s "$STAGE_DIR/boot/vmlinuz-$RELEASE" ] || die "no /boot/vmlinuz-$RELEASE after the installation"
	[ -s "$STAGE_DIR/boot/initrd.img-$RELEASE" ] ||
		die "the installation made no /boot/initrd.img-$RELEASE (log: $OBJ_DIR.install.log)"
}

# thermald_conf: guest/deb/thermal-conf.xml.in with this board's product
# name and the trip filled in
thermald_conf() {
	local product
	product=$(printf '%s' "$Q35_PRODUCT" | sed 's/[&|\\]/\\&/g')
	sed -e "s|@PRODUCT_NAME@|$product|g" -e "s|@TRIP_MC@|$TRIP_MC|g" \
		"$REPO_DIR/guest/deb/thermal-conf.xml.in"
}

# configure: thermald for this machine, the driver loaded at boot, the
# check and its unit, as an administrator would set them up
configure() {
	local conf=$STAGE_DIR/etc/thermald/thermal-conf.xml
	stage "guest: thermald configured for '$Q35_PRODUCT' (trip $((TRIP_MC / 1000)) C), the check enabled"
	thermald_conf >"$conf"
	! grep -q '@[A-Z_]*@' "$conf" || die "$conf: a placeholder left unfilled"
	install -d "$STAGE_DIR/etc/systemd/system/thermald.service.d"
	install -m 0644 "$REPO_DIR/guest/deb/thermald-powerclamp.conf" \
		"$STAGE_DIR/etc/systemd/system/thermald.service.d/powerclamp.conf"
	# loaded before thermald starts, which reads the cooling devices once
	# (udev would load it too, by the CPU's modalias, but at no set time)
	mkdir -p "$STAGE_DIR/etc/modules-load.d"
	echo intel_powerclamp >"$STAGE_DIR/etc/modules-load.d/intel_powerclamp.conf"
	install -m 0755 "$REPO_DIR/guest/deb/powerclamp-deb-check.sh" \
		"$STAGE_DIR/usr/local/sbin/powerclamp-deb-check"
	install -d "$STAGE_DIR$GUEST_LIB"
	install -m 0644 "$REPO_DIR/lib/ktap.sh" "$STAGE_DIR$GUEST_LIB/ktap.sh"
	printf 'release=%s\nversion=%s\n' "$RELEASE" "$VERSION" >"$STAGE_DIR$GUEST_LIB/settings"
	install -m 0644 "$REPO_DIR/guest/deb/powerclamp-deb-check.service" \
		"$STAGE_DIR/etc/systemd/system/"
	in_stage systemctl enable thermald.service powerclamp-deb-check.service 2>&1 |
		sed 's/^/    /'
}

make_image() {
	stage "guest: image and the kernel and initramfs copied out of it"
	rm -f "$IMAGE"
	mke2fs -q -t ext4 -L pc-deb-root -d "$STAGE_DIR" "$IMAGE" "$IMAGE_SIZE"
	rm -rf "$BOOT_DIR"
	mkdir -p "$BOOT_DIR"
	cp "$STAGE_DIR/boot/vmlinuz-$RELEASE" "$STAGE_DIR/boot/initrd.img-$RELEASE" "$BOOT_DIR/"
	echo "$RELEASE" >"$BOOT_DIR/release"
	info "$IMAGE ($(du -sh "$STAGE_DIR" | cut -f1) of files), $BOOT_DIR"
}

# boot: the image under the emulated-package QEMU, as run-qemu.sh runs it
# (q35, TCG, no VGA, NIC or parallel port, the console on the first
# serial port and the KTAP document on the second); sets STATUS
boot() {
	local release qemu
	release=$(cat "$BOOT_DIR/release" 2>/dev/null) ||
		die "no kernel copied out of an image in $BOOT_DIR (run without --boot-only)"
	[ -f "$IMAGE" ] || die "no image at $IMAGE (run without --boot-only)"
	mkdir -p "$LOG_DIR"
	rm -f "$KTAP_LOG"
	# tsc=reliable: the emulated-package QEMU has no HPET, so the TSC's
	# clocksource watchdog is the ACPI PM timer, which reads 0xffffff
	# after an S3 resume there; the watchdog then marked the TSC unstable
	# and switched to that dead timer, and time stopped in the guest.
	qemu=("$EMULATOR_BIN"
		-machine q35 -accel tcg -cpu "$CPU_MODEL" -smp "$SMP" -m 2048
		-name powerclamp-deb
		-kernel "$BOOT_DIR/vmlinuz-$release" -initrd "$BOOT_DIR/initrd.img-$release"
		-append "root=/dev/vda ro rootfstype=ext4 console=ttyS0 panic=-1 no_console_suspend tsc=reliable"
		-drive "file=$IMAGE,format=raw,if=virtio,snapshot=on"
		-rtc base=utc
		-display none -vga none -nic none -parallel none -no-reboot
		-serial stdio -monitor none
		-chardev "file,id=ktap,path=$KTAP_LOG" -serial chardev:ktap)
	stage "qemu: booting $release (emulated package, TCG, $CPU_MODEL, $SMP vCPUs, timeout ${TIMEOUT}s), console in $LOG"
	set +e
	timeout --foreground "$TIMEOUT" "${qemu[@]}" </dev/null | tee "$LOG"
	STATUS=${PIPESTATUS[0]}
	set -e
}

# verdict: 0 pass, 1 checks failed, 2 crashed, hung, a splat or no document
verdict() {
	local v=0
	case "$STATUS" in
	0) info "guest powered off" ;;
	124) v=2; info "guest hung: still running after ${TIMEOUT}s" ;;
	*) v=2; info "guest died (QEMU exit $STATUS)" ;;
	esac
	"$REPO_DIR/scripts/scan-console.sh" "$LOG" || v=2
	if ! grep -q '^KTAP version 1' "$KTAP_LOG" 2>/dev/null; then
		info "no KTAP document in $KTAP_LOG"
		v=2
	elif ! python3 "$REPO_DIR/scripts/ktap-parse.py" --name deb "$KTAP_LOG"; then
		((v == 2)) || v=1
	fi
	return "$v"
}

"$REPO_DIR/scripts/preflight.sh"
take_lock
"$REPO_DIR/scripts/install-deps.sh"
"$REPO_DIR/scripts/build-emulator.sh"
if ((BOOT_ONLY == 0)); then
	the_packages
	[ "$(cat "$DEB_ROOTFS.include" 2>/dev/null)" = "$INCLUDE" ] || make_base
	install_kernel
	configure
	make_image
fi
boot
rc=0
verdict || rc=$?
exit "$rc"
