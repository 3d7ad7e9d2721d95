# Process helpers for up.sh and down.sh: processes are found by the pids recorded in the state
# dir, never by name.

# alive PID [WORD]: the process exists and is not a zombie (a daemon killed a moment ago stays
# one until it is reaped) and, with WORD, its command line contains WORD (so a pid the
# system gave to another program since is not taken for the daemon).
alive() {
  local pid=$1 stat state command
  [ -n "$pid" ] && stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  state=${stat##*) }
  state=${state%% *}
  [ "$state" != Z ] && [ "$state" != X ] || return 1
  [ -n "${2:-}" ] || return 0
  # Read whole, not piped into grep -q: under pipefail a grep that has matched and left can
  # fail the pipeline through tr's SIGPIPE, and a running daemon would be taken for gone.
  command=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$command" == *"$2"* ]]
}

# start_ticks PID: when the process started (field 22 of /proc/PID/stat), or nothing.
start_ticks() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  # After the command, field 3 is the state; the start time is field 22 of the whole line.
  set -- $stat
  echo "${20}"
}

# stop_pids SECONDS PID...: SIGTERM to each, then waits for all of them together; those left
# after SECONDS get SIGKILL. Prints the pids it had to kill.
stop_pids() {
  local limit=$1 pid left deadline
  shift
  [ $# -gt 0 ] || return 0
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  deadline=$((SECONDS + limit))
  while :; do
    left=()
    for pid in "$@"; do alive "$pid" && left+=("$pid"); done
    [ ${#left[@]} -gt 0 ] || return 0
    [ $SECONDS -lt $deadline ] || break
    sleep 0.05
  done
  for pid in "${left[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  echo "${left[*]}"
}
