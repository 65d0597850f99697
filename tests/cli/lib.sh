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
