# Guest checks: module parameters, hostile input to cur_state, unprivileged writes. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

check_params() {
	local p v
	expect "duration default (ms)" "$(cat "$PARAMS/duration")" 24
	expect "window_size default" "$(cat "$PARAMS/window_size")" 2
	for p in duration window_size; do
		for v in "" " " abc -1 5abc 0x10 0 1 101 \
			"$(printf '9%.0s' {1..300})" "$(printf '\001\377\002')"; do
			write_rejected "$p <- '$(printf '%q' "$v" | cut -c1-20)'" "$PARAMS/$p" "$v"
		done
	done
	write_rejected "duration <- 64 KiB of junk" "$PARAMS/duration" \
		"$(head -c 65536 /dev/zero | tr '\0' 'x')"
	dmesg | grep -q "duration: expected a decimal integer in 4..100" &&
		pass "invalid parameter logs why" || fail "no log line for an invalid parameter"
	echo 10 >"$PARAMS/duration" && expect "duration accepts 10" "$(cat "$PARAMS/duration")" 10
	echo 5 >"$PARAMS/window_size" && expect "window_size accepts 5" "$(cat "$PARAMS/window_size")" 5
	echo 24 >"$PARAMS/duration"
	echo 2 >"$PARAMS/window_size"
}

# Hostile text to cur_state while clamping, so that "unchanged" means the
# running target survives. The thermal core parses it (patch 0009 makes
# that strict): every write must fail with EINVAL and change nothing.
check_hostile_cur_state() {
	local v
	set_target 15
	for v in "" " " abc -1 5abc 0x10 51 " 7" "$(printf '9%.0s' {1..300})" \
		"$(printf '\001\377\002')"; do
		write_rejected "cur_state <- '$(printf '%q' "$v" | cut -c1-20)'" "$CDEV/cur_state" "$v"
	done
	write_rejected "cur_state <- 64 KiB of junk" "$CDEV/cur_state" \
		"$(head -c 65536 /dev/zero | tr '\0' 'x')"
	assert_threads "$(online_cpus | paste -sd,)" "still clamping after hostile input"
	set_target 0
}

# Each file gets a value root may write (checked after), so that the only
# reason for the refusal is the permission, and the error must say so.
check_unprivileged() {
	local spec f v back err
	for spec in "$CDEV/cur_state 10" "$PARAMS/duration 10" "$PARAMS/window_size 3" \
		"$PARAMS/max_idle 40" "$PARAMS/cpumask 0"; do
		read -r f v <<<"$spec"
		if err=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
			sh -c "echo $v > $f" 2>&1); then
			fail "unprivileged write of $v to $f accepted"
		elif [[ $err == *"Permission denied"* ]]; then
			pass "unprivileged write of $v to $f refused (EACCES)"
		else
			fail "unprivileged write of $v to $f failed for another reason: $err"
		fi
	done
	expect "cur_state unchanged by the unprivileged user" "$(cat "$CDEV/cur_state")" 0
	for spec in "$CDEV/cur_state 10 0" "$PARAMS/duration 10 $DEFAULT_DURATION" \
		"$PARAMS/window_size 3 $DEFAULT_WINDOW_SIZE" "$PARAMS/max_idle 40 $DEFAULT_MAX_IDLE" \
		"$PARAMS/cpumask 0 0-$((NCPU - 1))"; do
		read -r f v back <<<"$spec"
		if echo "$v" >"$f" && [ "$(cat "$f")" = "$v" ]; then
			pass "root may write $v to $f (so the refusal above was the permission)"
		else
			fail "root cannot write $v to $f either"
		fi
		echo "$back" >"$f"
		if [[ $f == */max_idle ]]; then CDEV=$(cdev_dir); fi
	done
}


# The calibration learnt at one duration does not hold at another (the
# share of each period lost to its own cost changes with the period): a
# new duration forgets it.
check_duration_calibration() {
	local learnt
	start_loads
	set_target 25
	sleep 6
	set_target 0
	stop_loads
	learnt=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	((learnt > 0)) && pass "duration_calibration: $learnt ratios learnt at 25 % under load, kept after stopping" ||
		fail "duration_calibration: nothing learnt at 25 % under load"
	echo 20 >"$PARAMS/duration"
	learnt=$(awk '$1 ~ /^[0-9]+$/ && ($2 > 0 || $3 > 0 || $4 > 0)' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	expect "duration_calibration: ratios with any calibration after a new duration" "$learnt" 0
}
