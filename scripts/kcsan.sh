#!/usr/bin/env bash
# usage: scripts/kcsan.sh
#
# The driver under the kernel concurrency sanitizer. Builds the "kcsan"
# kernel (config-fragments/variants/kcsan.config: KCSAN, strict, instead
# of debug.config's KASAN, which excludes it), boots it on 4 vCPUs through
# the checks that start, retarget, skip, move the controller, change the
# duration and hotplug CPUs while the threads run, then prints every data
# race KCSAN reported whose stacks name the driver, and how many name
# only the rest of the kernel. Exits 1 if one names the driver.
#
# Not part of scripts/test.sh: a third kernel build (about 13 min with an
# empty ccache on 2 cores) and a long boot; run it when the lock-free
# parts of the driver change (docs/testing.md, "KCSAN").
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/kcsan.sh

The driver under the kernel concurrency sanitizer: builds the "kcsan"
kernel (config-fragments/variants/kcsan.config instead of debug.config),
boots it on 4 vCPUs through the checks that start, retarget, skip, move
the controller, change the duration and hotplug CPUs while the threads
run, then prints every data race KCSAN reported whose stacks name the
driver, and how many name only the rest of the kernel. Exits 1 if one
names the driver. Not part of the suite; sets the machine up as
scripts/demo.sh does (root, apt, the cache and its lock). Takes no
arguments.

Environment: KCSAN_SKIP_WATCH (watch one access in N, default 500).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
export PC_KERNEL=kcsan

CHECKS=(start_stop sync skip_when_idle controller hotplug
	duration_calibration skip_sync stress_writes stress_hotplug soak)
# One access in SKIP_WATCH is watched, instead of one in 4000: more races
# are caught in a boot this short, at some cost in speed.
SKIP_WATCH=${KCSAN_SKIP_WATCH:-500}
console=$LOG_DIR/console-kcsan.log
ktap=$LOG_DIR/ktap-kcsan.log

set_up_kernel

stage "guest: ${CHECKS[*]} on the KCSAN kernel (4 vCPUs, kcsan.skip_watch=$SKIP_WATCH)"
checks=${CHECKS[*]}
# The checks' own verdict is printed, not judged: KCSAN slows the guest,
# and timing checks may miss. Races are what this run is for.
"$REPO_DIR/run-qemu.sh" --mode test --smp 4 --cpu Skylake-Client,+monitor \
	--timeout 3000 --log "$console" --ktap "$ktap" \
	--append "pc.checks=${checks// /,} pc.debug=0 kcsan.skip_watch=$SKIP_WATCH" || true
info "checks: $(grep -c '^ *ok ' "$ktap" || true) ok, $(grep -c '^ *not ok ' "$ktap" || true) not ok ($ktap)"

stage "KCSAN reports in $console"
# A report runs from its "BUG: KCSAN:" line to the next line of '='.
reports=$(awk '
	{ sub(/\r$/, "") }	# the serial console ends its lines with CR LF
	/BUG: KCSAN:/ { inside = 1; text = "" }
	inside { text = text $0 "\n" }
	inside && /^(\[[ 0-9.]*\] )?=+$/ { inside = 0; print text "\001" }
' "$console")
# The kernel has no kallsyms (tinyconfig), so stacks are bare addresses.
# A race is the driver's when one of its accesses is made by the driver's
# code (the first frame of that access's stack) or to the driver's data:
# an address in the module area (from 0xffffffffa0000000; the kernel
# image, without KASLR here, sits at 0xffffffff81000000). Races in the
# kernel's own code that the injection threads merely lead to (the idle
# loop's tick handling) are the kernel's. Their places are named from
# the build's vmlinux.
# access_places REPORT: for each access, the address it touched and the
# first frame of its stack that is not KCSAN's own (without kallsyms the
# kernel cannot skip those itself), one per line
access_places() {
	awk '/ by (task|interrupt) / {
		match($0, /to 0x[0-9a-f]+/); print substr($0, RSTART + 3, RLENGTH - 3)
		while ((getline line) > 0 && line ~ /\] +0x[0-9a-f]+$/) {
			n = split(line, f, " "); print "frame " f[n]
		}
		print "end"
	}' <<<"$1" | while read -r first rest; do
		case "$first" in
		end) skipping=0 ;;
		frame) ((skipping)) && continue
			case "$(kernel_function "$rest")" in
			kcsan_* | __tsan_* | check_access) ;;
			*) echo "$rest"; skipping=1 ;;
			esac ;;
		*) echo "$first"; skipping=0 ;;
		esac
	done
}
in_module_area() { grep -Eq '^0xffffffff[a-f][0-9a-f]{7}$'; }
kernel_function() { addr2line -f -e "$OBJ_DIR/vmlinux" "$1" 2>/dev/null | head -n 1; }
driver=0 other=0
declare -A kernel_races=()
while IFS= read -r -d $'\001' report; do
	[ -n "${report//[[:space:]]/}" ] || continue
	if access_places "$report" | in_module_area; then
		driver=$((driver + 1))
		printf '%s\n' "$report" | sed 's/^/    /'
	else
		other=$((other + 1))
		where=$(access_places "$report" | awk 'NR % 2 == 0' | while read -r pc; do
			kernel_function "$pc"; done | sort -u | paste -sd/)
		kernel_races[$where]=$((${kernel_races[$where]:-0} + 1))
	fi
done <<<"$reports"
for where in "${!kernel_races[@]}"; do
	info "kernel: ${kernel_races[$where]} x data race in $where"
done
info "$driver races in the driver, $other elsewhere in the kernel"
grep -q 'BUG: KCSAN\|kcsan' "$console" || info "(KCSAN printed nothing: is it enabled? see $console)"
((driver == 0))
