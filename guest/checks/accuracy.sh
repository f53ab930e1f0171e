# Guest checks: accuracy against independent references. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# Plain idle accounting, which patches 0001 and 0002 change for every idle
# entry: an idle guest, module loaded at target 0, must show all its wall
# time as idle in /proc/stat, and account every tick.
check_idle_accounting() {
	local idle ticks
	sleep 1
	read -r idle _ ticks _ _ < <(measure_window 10)
	ktap_diag "idle guest: /proc/stat idle $idle% of wall, ticks $ticks% of wall"
	within "idle guest: /proc/stat idle (% of wall)" "$idle" 100 "$TOL_IDLE_PCT"
	within "idle guest: /proc/stat ticks (% of wall)" "$ticks" 100 "$TOL_TICKS_PCT"
}

# The clamp judged by references the driver does not compute: the work the
# loads lost (their schedstat runtime against wall time), /proc/stat's idle
# and its ticks against wall time. The driver's own figures (its measured
# ratio, its injected time) are printed; the measured ratio is held only
# against the work lost.
check_accuracy() {
	local target m idle lost ticks drv inj base_lost base_ticks clamp_lost
	start_loads
	sleep 1
	read -r _ base_lost base_ticks _ _ < <(measure_window 10)
	ktap_diag "unclamped: the loads lose $base_lost% of wall time, /proc/stat accounts $base_ticks% of it"
	for target in 10 25 40 49; do
		set_target "$target"
		sleep 3 # let the first windows and the calibration pass
		read -r idle lost ticks drv inj < <(measure_window 10)
		clamp_lost=$(difference "$lost" "$base_lost")
		ktap_diag "target $target: /proc/stat idle $idle%, work lost $lost% ($clamp_lost% to the clamp), ticks $ticks% of wall, driver measured $drv%, injected $inj%"
		ktap_diag "stats: $(paste -sd' ' "$DEBUG_DIR/stats")"
		within "target $target: /proc/stat idle vs target" "$idle" "$target" "$TOL_TARGET"
		within "target $target: work lost to the clamp vs target" "$clamp_lost" "$target" "$TOL_TARGET"
		between "target $target: work lost to the clamp minus /proc/stat idle" \
			"$(difference "$clamp_lost" "$idle")" "$LOST_OVER_IDLE_MIN" "$LOST_OVER_IDLE_MAX"
		within "target $target: /proc/stat ticks (% of wall)" "$ticks" 100 "$TOL_TICKS_LOADED"
		between "target $target: work lost to the clamp minus the driver's measured ratio" \
			"$(difference "$clamp_lost" "$drv")" "$LOST_OVER_IDLE_MIN" "$LOST_OVER_IDLE_MAX"
	done
	set_target 0
	stop_loads
	m=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	((m > 0)) && pass "calibration learnt ($m ratios with confidence)" ||
		fail "calibration table untouched after clamping under load"
}

