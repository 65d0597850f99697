#!/bin/sh
# Attacks on job output through `shoal logs`, as an ordinary user would try
# them against real `shoal server` and `shoal agent` processes: the agent
# runs as root, and the output path is the user's to choose and to change
# while the job runs. Nothing may come back that the user could not read
# with their own rights, nor any file that is not the user's own.
# Needs root (throwaway users are made with useradd); exits 77 otherwise.
set -u
SHOAL=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP [privilege] the log attacks need root to create throwaway users"
  exit 77
fi
TMP=$(mktemp -d)
chmod 755 "$TMP"
MALLORY=shoalsec$$
cleanup() {
  stop_cluster
  userdel "$MALLORY" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

HOME_M="$TMP/mallory"
useradd -M -d "$HOME_M" -s /bin/sh "$MALLORY" || { echo "FAIL useradd $MALLORY"; exit 1; }
mkdir -p "$HOME_M/d" "$HOME_M/e"
chown -R "$MALLORY" "$HOME_M"
# A root-only file the attacker wants.
SECRET="shoal-secret-$$-$(date +%s%N)"
echo "$SECRET" > "$TMP/secret"
chmod 600 "$TMP/secret"
SHADOW_LINE=$(head -n 1 /etc/shadow)
PASSWD_LINE=$(head -n 1 /etc/passwd)

start_cluster --heartbeat 200ms
TOKEN=$(user_token "$MALLORY")
as_mallory() { env SHOAL_TOKEN="$TOKEN" "$SHOAL" "$@"; }
submit() {  # submit <shoal submit args...>; prints the job id
  as_mallory submit "$@" 2>&1 | sed -n 's/^Submitted job \([0-9]*\).*/\1/p'
}
job_state() { as_mallory show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {  # wait_state <job> <state pattern>
  for _ in $(seq 200); do job_state "$1" | grep -Eq "$2" && return 0; sleep 0.05; done
  echo "FAIL job $1 never reached $2 (it is $(job_state "$1"))"
  exit 1
}
# The log of job $1 must not hold line $2 (whatever the command's exit).
no_leak() {  # no_leak <name> <job> <text that must not appear>
  as_mallory logs "$2" > "$TMP/log" 2>&1
  if grep -qF -- "$3" "$TMP/log"; then
    echo "FAIL $1: the log of job $2 holds what the user cannot read"; fail=1
  else
    echo "ok   $1 ($(head -c 120 "$TMP/log" | tr '\n' ' '))"
  fi
}

# The control: a user's own output is served.
J=$(submit -G 1 -D "$HOME_M" --wrap "echo hello-$$")
wait_state "$J" completed
check "own output is served" 0 "hello-$$" -- as_mallory logs "$J"

# 1. Output pointed at /etc/shadow: the task cannot open it (and fails);
#    the log must not return the file.
J=$(submit -G 1 -D "$HOME_M" -o /etc/shadow --wrap "echo x")
wait_state "$J" "failed|completed"
no_leak "output at /etc/shadow" "$J" "$SHADOW_LINE"

# 2. The same with a root-only 0600 file.
J=$(submit -G 1 -D "$HOME_M" -o "$TMP/secret" --wrap "echo x")
wait_state "$J" "failed|completed"
no_leak "output at a root-only file" "$J" "$SECRET"

# A running job swaps part of its own output path for a symbolic link.
# swap_attack <name> <output path> <swap commands> <the link> <text that must not come back>
swap_attack() {
  J=$(submit -G 1 -D "$HOME_M" -o "$2" --wrap "echo started; $3; sleep 60")
  wait_state "$J" running
  for _ in $(seq 100); do [ -L "$4" ] && break; sleep 0.05; done
  no_leak "$1" "$J" "$5"
}

# 3. Its output file, for a link to /etc/shadow.
swap_attack "output replaced by a symlink" "$HOME_M/out.txt" "rm -f out.txt; ln -s /etc/shadow out.txt" \
  "$HOME_M/out.txt" "$SHADOW_LINE"
check "the symlink is named as such" 4 "symbolic link" -- as_mallory logs "$J"
as_mallory cancel "$J" > /dev/null 2>&1

# 4. The output's folder, for a link to /etc (O_NOFOLLOW guards the last
#    component only: the user's rights guard the rest).
swap_attack "output folder replaced by a symlink" "$HOME_M/d/shadow" "mv d d.old; ln -s /etc d" "$HOME_M/d" \
  "$SHADOW_LINE"
as_mallory cancel "$J" > /dev/null 2>&1

# 5. The same towards a file the user may read but does not own: only the
#    user's own files are served.
swap_attack "a readable file of another owner" "$HOME_M/e/passwd" "mv e e.old; ln -s /etc e" "$HOME_M/e" \
  "$PASSWD_LINE"
check "the owner is named" 4 "does not belong to user" -- as_mallory logs "$J"
as_mallory cancel "$J" > /dev/null 2>&1

exit $fail
