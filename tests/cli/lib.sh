# Shared by the CLI tests: `check` runs a command and checks its exit code
# and that its output holds a pattern (any output for an empty pattern). The caller sets TMP and, at the end,
# exits with $fail.
fail=0
check() {  # check <name> <expected exit> <pattern in output> -- command...
  name=$1; want=$2; pattern=$3; shift 4
  "$@" > "$TMP/out" 2>&1
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, want $want"; cat "$TMP/out"; fail=1; return
  fi
  if [ -n "$pattern" ] && ! grep -q -- "$pattern" "$TMP/out"; then
    echo "FAIL $name: output lacks '$pattern'"; cat "$TMP/out"; fail=1; return
  fi
  echo "ok   $name"
}

# `shoal up` on a free loopback port with its state, HOME and a work folder
# under $TMP; exports SHOAL_SERVER and SHOAL_STATE_DIR (the CLI's token comes
# from the server's unix socket there), and enters the work folder: jobs
# write slurm-<id>.out there, never where ctest runs tests side by side (each
# `shoal up` numbers its jobs from 1). The caller sets SHOAL and TMP and
# calls stop_up on exit. start_up [shoal up flags...]
UP_PID=
start_up() {
  export HOME="$TMP/home" SHOAL_STATE_DIR="$TMP/state"
  unset SHOAL_TOKEN SHOAL_TOKEN_FILE SHOAL_SOCKET
  mkdir -p "$HOME" "$TMP/work"
  "$SHOAL" up --state-dir "$SHOAL_STATE_DIR" --listen 127.0.0.1:0 "$@" > "$TMP/up.log" 2>&1 &
  UP_PID=$!
  for _ in $(seq 200); do grep -qs "Shoal is up" "$TMP/up.log" && break; sleep 0.05; done
  SHOAL_SERVER=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$TMP/up.log" | head -1)
  [ -n "$SHOAL_SERVER" ] || { echo "FAIL shoal up did not start"; cat "$TMP/up.log"; exit 1; }
  export SHOAL_SERVER
  cd "$TMP/work" || exit 1
}
stop_up() {  # Ctrl-C, as a user would, and wait for it
  if [ -n "$UP_PID" ]; then kill -INT "$UP_PID" 2>/dev/null; wait "$UP_PID" 2>/dev/null; fi
  UP_PID=
  # Its running steps' folder stays while steps that were stopping are in
  # it (a `shoal up` on the same state finds them); a test's state goes.
  steps=$(sed -n 's/^running job steps in //p' "$TMP/up.log" 2>/dev/null)
  if [ -n "$steps" ]; then rm -rf "$steps"; fi
}
