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
  local pid
  [ $# -gt 1 ] || return 0
  for pid in "${@:2}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait_pids "$@"
}

# wait_pids SECONDS PID...: waits until none of the PIDs runs; those left after SECONDS get
# SIGKILL. Prints the pids it had to kill.
wait_pids() {
  local limit=$1 pid left deadline
  shift
  [ $# -gt 0 ] || return 0
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

# Each daemon up.sh starts runs under deploy/lib/supervise.sh, which starts it again when it
# exits; the daemon's pid is in STATE/run/NAME.pid, its supervisor's in
# STATE/run/supervisors/NAME.pid.

# supervisor_of STATE NAME: the pid of NAME's supervisor if it runs, else nothing.
supervisor_of() {
  local pid
  pid=$(cat "$1/run/supervisors/$2.pid" 2>/dev/null) || return 0
  ! alive "$pid" "supervise.sh $2 $1/run/$2.pid" || echo "$pid"
}

# release_supervisors STATE: tells every supervisor (SIGUSR1) to exit at once and leave its
# daemon running, so that nothing is started again while the daemons are stopped; waits for them
# (SIGKILL after 5 s) and forgets them.
release_supervisors() {
  local f name pid pids=()
  for f in "$1"/run/supervisors/*.pid; do
    [ -f "$f" ] || continue
    name=$(basename "$f" .pid)
    pid=$(supervisor_of "$1" "$name")
    [ -z "$pid" ] || { kill -USR1 "$pid" 2>/dev/null || true; pids+=("$pid"); }
  done
  wait_pids 5 "${pids[@]}" >/dev/null
  rm -f "$1"/run/supervisors/*.pid
}

# stop_supervised STATE NAME: stops NAME and its supervisor: SIGTERM to the supervisor, which
# passes it on and exits once the daemon has (to the daemon itself when it has no supervisor);
# both are waited for, and killed after 10 s.
stop_supervised() {
  local sup pid pids=()
  sup=$(supervisor_of "$1" "$2")
  pid=$(cat "$1/run/$2.pid" 2>/dev/null || true)
  if [ -n "$sup" ]; then
    kill -TERM "$sup" 2>/dev/null || true
    pids+=("$sup")
  elif alive "$pid" "$1"; then
    kill -TERM "$pid" 2>/dev/null || true
  fi
  ! alive "$pid" "$1" || pids+=("$pid")
  wait_pids 10 "${pids[@]}" >/dev/null
  rm -f "$1/run/supervisors/$2.pid"
}
