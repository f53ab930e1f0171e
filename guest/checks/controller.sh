# Guest checks: the user space controller. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

check_controller() {
	local ctl=powerclamp-ctl temp=/tmp/plant-temp log=/tmp/ctl.log plant summary
	local settle mean_err max_err tmin tmax under last
	command -v "$ctl" >/dev/null || { fail "controller: $ctl not installed"; return; }
	expect_failure "controller: no arguments is a usage error" 2 "--sensor and --setpoint are required" "$ctl"
	expect_failure "controller: bad gain" 2 "--kp: 'x' is not a number" "$ctl" -s /proc/uptime -p 1 --kp x
	expect_failure "controller: missing sensor" 1 "cannot read sensor /nonexistent" \
		"$ctl" -s /nonexistent -p 60
	expect_failure "controller: missing cooling device dir" 1 "cannot read /nonexistent/max_state" \
		"$ctl" -s /proc/uptime -p 60 -c /nonexistent
	rmmod "$MODULE"
	expect_failure "controller: module not loaded" 1 "no cooling device of type $MODULE" \
		"$ctl" -s /proc/uptime -p 60
	modprobe "$MODULE"
	CDEV=$(cdev_dir)

	start_loads
	pc-plant "$temp" 30 60 3 100 &
	plant=$!
	sleep 1
	"$ctl" -s "$temp" -S 0.001 -p 66 -i 500 -n 6 --dry-run >"$log"
	last=$(awk -F'target=' '/^t=/ { t = $2 } END { print t + 0 }' "$log")
	((last > 0)) && pass "controller: dry run computes targets (last $last)" ||
		fail "controller: dry run computed no target"
	expect "controller: dry run leaves cur_state alone" "$(cat "$CDEV/cur_state")" 0

	if "$ctl" -s "$temp" -S 0.001 -p 66 -i 500 -n 80 >"$log"; then
		pass "controller: 40 s closed loop ran"
	else
		fail "controller: exited with $?: $(tail -n 2 "$log")"
	fi
	expect "controller: cur_state back to 0 on exit" "$(cat "$CDEV/cur_state")" 0
	kill "$plant"
	wait "$plant" 2>/dev/null
	stop_loads
	# settle time (|error| <= 2 from then on), over the last 10 s: mean and
	# max |error|, target range; lowest value overall (undershoot)
	summary=$(awk -v sp=66 '/^t=/ {
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 }
			n++; t[n] = v["t"]; e[n] = v["error"]; u[n] = v["target"]
			if (!n0 || v["value"] < lo) lo = v["value"]; n0 = 1
		}
		END {
			settle = -1
			for (i = n; i >= 1; i--) { a = e[i] < 0 ? -e[i] : e[i]; if (a > 2) break }
			if (i < n) settle = t[i + 1]
			for (i = n - 19; i <= n; i++) {
				a = e[i] < 0 ? -e[i] : e[i]; s += a; if (a > m) m = a
				if (i == n - 19 || u[i] < umin) umin = u[i]
				if (i == n - 19 || u[i] > umax) umax = u[i]
			}
			printf "%.1f %.2f %.2f %d %d %.2f\n", settle, s / 20, m, umin, umax, sp - lo
		}' "$log")
	read -r settle mean_err max_err tmin tmax under <<<"$summary"
	ktap_diag "controller: settled (|error| <= 2) after ${settle} s; last 10 s: mean |error| $mean_err, max $max_err, target $tmin..$tmax %; undershoot $under"
	grep '^t=' "$log" | awk 'NR % 4 == 1' | sed 's/^/#   /'
	# How fast it settles is a figure (printed above), not a pass mark: the
	# guest's speed moves with the host's load. It must settle for good,
	# with 10 s to spare at the end of the run.
	awk -v s="$settle" 'BEGIN { exit !(s >= 0 && s <= 30) }' &&
		pass "controller: settles and holds the set point for the last 10 s ($settle s)" ||
		fail "controller: did not settle ($settle)"
	within "controller: mean |error| over the last 10 s (degrees)" "$mean_err" 0 1.5
	within "controller: target swing over the last 10 s (no oscillation, points)" "$((tmax - tmin))" 0 6
	# 66 degrees is 60 % busy: about 40 % less the guest's own idle. A
	# target at a limit would mean the loop lost control.
	((tmin > 0 && tmax < 50)) && pass "controller: steady target inside 0..50 ($tmin..$tmax)" ||
		fail "controller: target at a limit ($tmin..$tmax)"
	awk -v u="$under" 'BEGIN { exit !(u <= 4) }' &&
		pass "controller: undershoot below the set point <= 4 degrees ($under)" ||
		fail "controller: undershoot $under degrees"
}
