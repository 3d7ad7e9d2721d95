# The checks the shell tests share; source it after defining fail MESSAGE (which exits).
# The checks read a command's whole output before matching it: under pipefail, `cmd | grep -q`
# can fail a passing check, grep exiting at the first match and cmd dying of SIGPIPE.

# until_ok SECONDS COMMAND...: runs COMMAND until it succeeds, failing after SECONDS.
until_ok() {
  local limit=$1 deadline
  shift
  deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "not within ${limit}s: $*"
    sleep 0.1
  done
}

# says LINE COMMAND...: COMMAND succeeds and a line of its output (stdout and stderr) is
# exactly LINE; otherwise what it said goes to stderr.
says() {
  local line=$1 out
  shift
  out=$("$@" 2>&1) || { echo "$out" >&2; return 1; }
  grep -qxF -- "$line" <<<"$out" || { echo "expected the line '$line' in:" >&2; echo "$out" >&2; return 1; }
}

# shows PATTERN COMMAND...: COMMAND succeeds and a line of its output matches PATTERN.
shows() {
  local pattern=$1 out
  shift
  out=$("$@" 2>&1) || { echo "$out" >&2; return 1; }
  grep -q -- "$pattern" <<<"$out" || { echo "expected '$pattern' in:" >&2; echo "$out" >&2; return 1; }
}
