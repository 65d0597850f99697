#!/bin/sh
# The local identity socket of a `shoal server` with its default settings,
# on a host shared with other users: another local user reaches
# <state-dir>/shoal.sock, gets a token for their own uid (and nothing more),
# and can neither list nor read nor write anything in the state directory.
# A state directory left open by an older version is closed at start, with a
# note that says what changed.
# Needs root (a throwaway user is made with useradd); exits 77 otherwise.
set -u
SHOAL=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP [privilege] the local socket test needs root to create a throwaway user"
  exit 77
fi
TMP=$(mktemp -d)
chmod 755 "$TMP"
EVE=shoalsock$$
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  userdel "$EVE" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../cli/lib.sh"

useradd -M -d "$TMP/eve" -s /bin/sh "$EVE" || { echo "FAIL useradd $EVE"; exit 1; }
mkdir -p "$TMP/eve" && chown "$EVE" "$TMP/eve"
STATE="$TMP/state"
# What an older version could leave: an open folder and an open file in it.
SECRET="shoal-secret-$$-$(date +%s%N)"
mkdir -m 755 "$STATE"
echo "$SECRET" > "$STATE/leftover.txt"
chmod 644 "$STATE/leftover.txt"

# The server as an operator starts it: TLS, the default socket.
export HOME="$TMP/home"
mkdir -p "$HOME"
unset SHOAL_TOKEN SHOAL_TOKEN_FILE SHOAL_SOCKET
"$SHOAL" server --state-dir "$STATE" --listen 127.0.0.1:0 > "$TMP/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 200); do grep -qs "listening on" "$TMP/server.log" && break; sleep 0.05; done
SERVER=$(grep -o 'https://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
[ -n "$SERVER" ] || { echo "FAIL the server did not start"; cat "$TMP/server.log"; exit 1; }
cp "$STATE/tls/ca.crt" "$TMP/ca.crt" && chmod 644 "$TMP/ca.crt"  # public, as /v1/ca serves it

check "the open state folder is closed, with a note" 0 "note: $STATE was mode 0755: it is 0711 now" -- \
  cat "$TMP/server.log"
check "  and the open file in it" 0 "note: $STATE/leftover.txt was open to other users (mode 0644): it is 0600 now" -- \
  cat "$TMP/server.log"
check "  no note that the socket is out of reach" 1 "" -- grep -q "cannot reach" "$TMP/server.log"
check "the state folder is 0711" 0 "^711$" -- stat -c %a "$STATE"
check "the socket is open to every local user" 0 "^socket 666$" -- stat -c '%F %a' "$STATE/shoal.sock"

# Eve, another local user, with the server's address, its CA and its state
# folder (where the default socket is), and no token of her own.
as_eve() {
  setpriv --reuid "$EVE" --regid "$(id -g "$EVE")" --init-groups \
    env HOME="$TMP/eve" SHOAL_SERVER="$SERVER" SHOAL_CA_FILE="$TMP/ca.crt" SHOAL_STATE_DIR="$STATE" "$@"
}
check "eve reaches the default socket and the API with its token" 0 "" -- as_eve "$SHOAL" queue
J=$(as_eve "$SHOAL" submit -H --wrap true 2>&1 | sed -n 's/^Submitted job \([0-9]*\).*/\1/p')
check "  as herself: her job is hers" 0 "\"user\": \"$EVE\"" -- as_eve "$SHOAL" show "$J" --json
check "  and not an admin" 4 "" -- as_eve "$SHOAL" token create --user root --role admin
check "  nor can she see others' jobs" 4 "" -- as_eve "$SHOAL" queue --all

# Nothing in the state folder is hers to list, read or write.
check "eve cannot list the state folder" 2 "Permission denied" -- as_eve ls "$STATE"
check "eve cannot create a file there" 1 "Permission denied" -- as_eve touch "$STATE/mine"
entries=$(find "$STATE" -mindepth 1 ! -type s)
[ -n "$entries" ] || { echo "FAIL the state folder is empty"; exit 1; }
for path in $entries; do
  if [ -d "$path" ]; then
    if as_eve ls "$path" > /dev/null 2>&1; then echo "FAIL eve lists $path"; fail=1; fi
  elif as_eve cat "$path" > /dev/null 2>&1; then
    echo "FAIL eve reads $path ($(stat -c %a "$path"))"; fail=1
  fi
done
echo "ok   eve can read none of: $(echo "$entries" | sed "s|$STATE/||" | tr '\n' ' ')"
check "  (the database and its WAL among them)" 0 "shoal.db-wal" -- echo "$entries"
check "  nor the leftover secret" 1 "Permission denied" -- as_eve cat "$STATE/leftover.txt"
exit $fail
