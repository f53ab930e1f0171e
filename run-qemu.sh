#!/usr/bin/env bash
# Boot the built kernel and rootfs image under QEMU (TCG by default) and
# return the guest's verdict: 0 pass, 1 guest checks failed, 2 the guest
# crashed, hung or printed a kernel splat. The serial console is logged.
#
# usage: run-qemu.sh [--mode test|demo|bench|shell] [--log FILE] [--smp N]
#                    [--timeout SECONDS] [--append "ARGS"] [--cpu MODEL] [--kvm]
#                    [--kernel FILE [--initrd FILE]] [--name NAME] [--ktap FILE]
#                    [--emulator stock|package]
#
# --emulator package runs the emulated-package QEMU (scripts/build-emulator.sh,
# docs/emulator.md) instead of Debian's qemu-system-x86_64; the CPU model then
# wants pkg-model=on.
#
# In test mode the guest also writes its KTAP document to a second serial
# port, logged to the --ktap file (default: the console log's name with
# console- replaced by ktap-), which no kernel message reaches.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/lib/usage.sh"
usage_or_refuse --mode= --log= --smp= --timeout= --append= --cpu= --kvm --kernel= --initrd= --name= --ktap= --emulator= -- "$@" <<'EOF'
usage: run-qemu.sh [--mode test|demo|bench|shell] [--log FILE] [--smp N]
                   [--timeout SECONDS] [--append "ARGS"] [--cpu MODEL] [--kvm]
                   [--kernel FILE [--initrd FILE]] [--name NAME] [--ktap FILE]
                   [--emulator stock|package]
  e.g. ./run-qemu.sh --mode test --append "pc.checks=hotplug"

Boots the built kernel and root file system image under QEMU (TCG unless
--kvm) and exits with the guest's verdict: 0 pass, 1 guest checks failed,
2 the guest crashed, hung or printed a kernel splat. The serial console
is logged.

  --mode MODE        test (default: the checks named by pc.checks=), demo,
                     bench, or shell (an interactive guest on this terminal)
  --log FILE         the console log (default out/console-MODE.log)
  --smp N            vCPUs (default $POWERCLAMP_SMP, else 4)
  --timeout SECONDS  a guest still running then counts as hung (default
                     $POWERCLAMP_TIMEOUT, else 1200)
  --append "ARGS"    added to the kernel command line,
                     e.g. "pc.checks=stress_hotplug,kmemleak,health pc.scale=10"
  --cpu MODEL        QEMU's -cpu (default Skylake-Client,+monitor)
  --kvm              KVM instead of TCG (only on request)
  --kernel FILE      another kernel (default: PC_KERNEL's bzImage)
  --initrd FILE      an initramfs for that kernel
  --name NAME        QEMU's -name (default powerclamp)
  --ktap FILE        test mode: the KTAP document's log (default: the
                     console log's name with console- replaced by ktap-)
  --emulator stock|package
                     Debian's qemu-system-x86_64 (default) or the
                     emulated-package QEMU (scripts/build-emulator.sh)

Environment: PC_KERNEL (test, bench, ...: whose build and image),
POWERCLAMP_SMP, POWERCLAMP_TIMEOUT, POWERCLAMP_LOGS (instead of out/).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/scripts/lib.sh"

MODE="test"
SMP=${POWERCLAMP_SMP:-4}
TIMEOUT=${POWERCLAMP_TIMEOUT:-1200}
ACCEL=tcg
CPU_MODEL="Skylake-Client,+monitor"  # GenuineIntel family 6 with MWAIT
APPEND=""
LOG=""
KERNEL=""
INITRD=()
NAME=powerclamp
KTAP_LOG=""
EMULATOR=stock
while (($#)); do
	case "$1" in
	--mode) MODE=$2; shift 2 ;;
	--log) LOG=$2; shift 2 ;;
	--smp) SMP=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--append) APPEND=$2; shift 2 ;;
	--cpu) CPU_MODEL=$2; shift 2 ;;
	--kvm) ACCEL=kvm; shift ;;  # only on request: /dev/kvm here cannot boot
	--kernel) KERNEL=$2; shift 2 ;;
	--initrd) INITRD=(-initrd "$2"); shift 2 ;;
	--name) NAME=$2; shift 2 ;;  # QEMU's -name, to find its process
	--ktap) KTAP_LOG=$2; shift 2 ;;
	--emulator) EMULATOR=${2:-stock}; shift 2 ;;
	*) die "unknown argument: $1" ;;
	esac
done
LOG=${LOG:-$LOG_DIR/console-$MODE.log}
KERNEL=${KERNEL:-$OBJ_DIR/arch/x86/boot/bzImage}
[ -f "$KERNEL" ] || die "no kernel at $KERNEL (run scripts/build-kernel.sh)"
[ -f "$IMAGE" ] || die "no rootfs image at $IMAGE (run scripts/build-rootfs.sh)"
mkdir -p "$(dirname "$LOG")"
case "$EMULATOR" in
stock) QEMU_BIN=qemu-system-x86_64 ;;
package)
	QEMU_BIN=$EMULATOR_BIN
	[ -x "$QEMU_BIN" ] || die "no emulated-package QEMU at $QEMU_BIN (run scripts/build-emulator.sh)"
	;;
*) die "--emulator must be stock or package, not '$EMULATOR'" ;;
esac

# q35, not the default i440fx: QEMU gives i440fx an ACPI _PRT method that
# loops over 128 entries, which the KASAN kernel's AML interpreter took
# 26-30 s to run under TCG (a soft lockup at boot, then AE_AML_LOOP_TIMEOUT
# and a disk without its interrupt). q35's _PRT is a static table. No VGA,
# NIC or parallel port: the guests use none, and the emulated-package QEMU
# is built without them (emulator/devices.mak).
QEMU=("$QEMU_BIN"
	-machine q35 -accel "$ACCEL" -cpu "$CPU_MODEL" -smp "$SMP" -m 2048
	-name "$NAME" -kernel "$KERNEL" "${INITRD[@]}"
	-append "console=ttyS0 root=/dev/vda rw rootfstype=ext4 init=/sbin/pc-init panic=-1 pc.mode=$MODE $APPEND"
	-drive "file=$IMAGE,format=raw,if=virtio,snapshot=on"
	-device "isa-debug-exit,iobase=0xf4,iosize=0x04"
	-display none -vga none -nic none -parallel none -no-reboot)

# The console is the first serial port (ttyS0): added before the KTAP one.
if [ "$MODE" = shell ]; then
	exec "${QEMU[@]}" -serial mon:stdio
fi
QEMU+=(-serial stdio -monitor none)
if [ "$MODE" = test ]; then
	KTAP_LOG=${KTAP_LOG:-$(dirname "$LOG")/$(basename "$LOG" | sed 's/^console-/ktap-/')}
	[ "$KTAP_LOG" != "$LOG" ] || KTAP_LOG=$LOG.ktap
	rm -f "$KTAP_LOG"
	QEMU+=(-chardev "file,id=ktap,path=$KTAP_LOG" -serial chardev:ktap)
fi


stage "qemu: booting ($EMULATOR $ACCEL, $CPU_MODEL, $SMP vCPUs, mode $MODE, timeout ${TIMEOUT}s), console in $LOG"
set +e
timeout --foreground "$TIMEOUT" "${QEMU[@]}" </dev/null | tee "$LOG"
status=${PIPESTATUS[0]}
set -e

case "$status" in
33) verdict=0; info "guest reported success" ;;
35) verdict=1; info "guest reported failed checks" ;;
124) verdict=2; info "guest hung: no verdict after ${TIMEOUT}s" ;;
*) verdict=2; info "guest died without a verdict (QEMU exit $status: panic or crash)" ;;
esac

if ! "$REPO_DIR/scripts/scan-console.sh" "$LOG"; then
	verdict=2
fi
exit "$verdict"
