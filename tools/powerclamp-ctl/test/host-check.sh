#!/usr/bin/env bash
# make check: powerclamp-ctl on the host, with no driver. --help is clean
# text on stdout and exits 0; a usage error exits 2; three periods against
# a stand-in cooling device and sensor write a target above 0 and leave 0
# on exit; the systemd unit's ExecStart options are ones the program takes.
set -euo pipefail
ctl=./powerclamp-ctl
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check: FAIL: $*" >&2; exit 1; }

"$ctl" --help >"$work/help" || fail "--help exited $?"
head -n 1 "$work/help" | grep -q '^Usage: powerclamp-ctl ' || fail "--help does not start with Usage:"
! grep -q '%%' "$work/help" || fail "--help prints '%%'"
rc=0
"$ctl" --no-such-option 2>/dev/null || rc=$?
((rc == 2)) || fail "an unknown option exited $rc, want 2"

mkdir "$work/cdev"
echo 50 >"$work/cdev/max_state"
echo 0 >"$work/cdev/cur_state"
echo 80000 >"$work/temp"
"$ctl" --sensor "$work/temp" --scale 0.001 --setpoint 70 --cooling-device "$work/cdev" \
	--interval 10 --count 3 >"$work/run" || fail "three periods exited $?"
grep -q 'target=[1-9]' "$work/run" || fail "no target above 0 at 10 degrees too hot: $(cat "$work/run")"
[ "$(cat "$work/cdev/cur_state")" = 0 ] || fail "cur_state left at $(cat "$work/cdev/cur_state")"

# the unit's ExecStart, with the stand-ins for its sensor and device
exec_start=$(sed -n 's/^ExecStart=//p' powerclamp-ctl.service)
read -r -a args <<<"$exec_start"
[ "${args[0]}" = /usr/local/sbin/powerclamp-ctl ] || fail "the unit runs ${args[0]}"
args=("${args[@]:1}")
args=("${args[@]/#\/sys\/class\/thermal\/thermal_zone0\/temp/$work/temp}")
"$ctl" "${args[@]}" --cooling-device "$work/cdev" --dry-run --count 1 --interval 10 ||
	fail "the unit's options are refused: ${args[*]}"
echo "check: powerclamp-ctl --help, usage error, three periods and the unit's options: ok"
