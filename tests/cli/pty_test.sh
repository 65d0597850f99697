#!/bin/sh
# `shoal run --pty` (srun --pty) through `shoal up`: task 0 on a terminal of
# its node, typed into from here. Piped input reaches a shell that sees a
# terminal, its exit code comes back, the end of input is the terminal's
# end-of-file; from a terminal (script(1) gives one) Ctrl-C interrupts the
# remote program and not the session, and the window's size travels; the
# terminal's input is its owner's alone.
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
start_up --nodes 1 --profile dgx-h100

printf '%s\n' 'tty' '[ -t 0 ] && [ -t 1 ] && echo "a terminal: $((6*7))"' 'exit 3' > typed
check "run --pty: piped input, the step's exit code" 3 "a terminal: 42" -- sh -c "'$SHOAL' run --pty /bin/sh < typed"
cp "$TMP/out" typed.out  # check writes each command's output to $TMP/out
check "  on a pseudo-terminal of the node" 0 "/dev/pts/[0-9]" -- cat typed.out
check "run --pty: the end of input ends cat" 0 "^piped line" -- sh -c "printf 'piped line\n' | '$SHOAL' run --pty cat"
check "run without --pty: no terminal" 0 "^none$" -- sh -c "'$SHOAL' run sh -c 'tty -s || echo none'"

# From a terminal: raw mode here, so Ctrl-C (byte 3) reaches the remote
# shell's foreground program, not shoal run; the window's size goes along.
# The program says itself that it runs (a file), so that Ctrl-C finds it in
# the foreground.
cat > nap.py <<'PY'
import time
open("started", "w").close()
time.sleep(30)
PY
{
  printf 'python3 nap.py\n'
  for _ in $(seq 600); do [ -e started ] && break; sleep 0.1; done
  sleep 1
  printf '\003'
  sleep 0.5
  printf 'stty size; echo "after: $((1+1))"; exit 4\n'
} | script -qec "stty rows 33 cols 101; '$SHOAL' run --pty /bin/sh" /dev/null > tty.out 2>&1
code=$?
begun=$(stat -c %Y started 2>/dev/null || echo 0)
check "run --pty from a terminal: Ctrl-C stops the program, the shell goes on" 0 "after: 2" -- cat tty.out
check "  the program saw the interrupt" 0 "KeyboardInterrupt" -- cat tty.out
check "  and its exit code comes back" 0 "" -- test "$code" = 4
check "  its 30 s nap was cut short" 0 "" -- test $(( $(date +%s) - begun )) -lt 25
check "  the window's size went along" 0 "33 101" -- cat tty.out

# Only the job's owner (or an admin) types into its terminal: the API as
# `shoal run` uses it, with a token of the owner's and one of another user.
token() { "$SHOAL" token create --user "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
type_into() {  # type_into TOKEN STEP BYTES: prints the HTTP status
  curl -s -o "$TMP/typed.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
    --data-binary "$3" "$SHOAL_SERVER/v1/jobs/$job/steps/$2/input"
}
ME=$(token "$(id -un)")
BOB=$(token bob)
check "a job to type into" 0 "Submitted job" -- "$SHOAL" submit -o holder.out --wrap 'sleep 120'
job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
for _ in $(seq 200); do "$SHOAL" show "$job" 2>/dev/null | grep -q 'state.*running' && break; sleep 0.1; done
# Its input stays open and silent (a FIFO held open here): only what the
# API types reaches the shell.
mkfifo silent
"$SHOAL" run --jobid "$job" --pty sh -c 'read line; echo "read: $line"' < silent > runner.out 2>&1 &
exec 3> silent
for _ in $(seq 300); do [ "$(type_into "$ME" 1 '')" = 200 ] && break; sleep 0.1; done
check "the step is in the job's record, with its terminal" 0 '"pty"' -- "$SHOAL" show "$job" --json
check "another user cannot type into it" 0 "^403$" -- type_into "$BOB" 1 'rm -rf ~
'
check "its owner can" 0 "^200$" -- type_into "$ME" 1 'hello there
'
for _ in $(seq 100); do grep -q "read: hello there" runner.out && break; sleep 0.1; done
check "  and the shell read the owner's line" 0 "read: hello there" -- cat runner.out
check "  not the other user's" 0 "" -- sh -c "! grep -q 'rm -rf' runner.out"
"$SHOAL" run --jobid "$job" sleep 20 > /dev/null 2>&1 &
plain_step=$!
# 503 until the step runs on its node, then 404: it has no terminal.
for _ in $(seq 200); do [ "$(type_into "$ME" 2 x)" = 503 ] || break; sleep 0.1; done
check "a step without a terminal takes no input" 0 "^404$" -- type_into "$ME" 2 x
kill "$plain_step" 2>/dev/null; wait "$plain_step" 2>/dev/null
exec 3>&-
"$SHOAL" cancel "$job" > /dev/null
exit $fail
