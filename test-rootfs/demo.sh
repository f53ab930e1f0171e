#!/bin/bash
# Guest-side demo: clamp a fully loaded guest at 25 % and show what the
# system and the driver measured.
set -u
NCPU=$(nproc --all)
TARGET=${TARGET:-25}
loads=()

proc_stat() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print $5 + $6, t }' /proc/stat; }
runtime() { local p s=0; for p in "${loads[@]}"; do s=$((s + $(cut -d' ' -f1 "/proc/$p/schedstat"))); done; echo "$s"; }

sample() {
	local label=$1 a b r0 r1 t0 t1
	read -r -a a < <(proc_stat); r0=$(runtime); t0=$(date +%s%N)
	sleep 5
	read -r -a b < <(proc_stat); r1=$(runtime); t1=$(date +%s%N)
	awk -v l="$label" -v i="$((b[0] - a[0]))" -v T="$((b[1] - a[1]))" \
	    -v r="$((r1 - r0))" -v w="$((t1 - t0))" -v n="$NCPU" 'BEGIN {
		printf "%-22s /proc/stat idle %5.1f %%   loads got %5.1f %% of the CPUs\n",
			l, 100 * i / T, 100 * r / w / n }'
}

modprobe intel_powerclamp
for d in /sys/class/thermal/cooling_device*; do
	[ "$(cat "$d/type")" = intel_powerclamp ] && cdev=$d
done
echo "== cooling device $cdev: type $(cat "$cdev/type"), max_state $(cat "$cdev/max_state")"
for ((c = 0; c < NCPU; c++)); do
	taskset -c "$c" bash -c 'while :; do :; done' &
	loads+=($!)
done
sleep 1
sample "no clamp:"
echo "== echo $TARGET > $cdev/cur_state"
echo "$TARGET" >"$cdev/cur_state"
sleep 3
sample "clamped at $TARGET %:"
echo "== cur_state reads $(cat "$cdev/cur_state")"
echo "== injection threads:"
ps -eo pid,cls,rtprio,psr,comm | awk 'NR == 1 || /kidle_inject/'
echo "== /sys/kernel/debug/intel_powerclamp/stats:"
sed 's/^/   /' /sys/kernel/debug/intel_powerclamp/stats
echo 0 >"$cdev/cur_state"
kill "${loads[@]}"
wait 2>/dev/null
echo "== stopped: $(pgrep -c kidle_inject) kidle_inject threads left"
