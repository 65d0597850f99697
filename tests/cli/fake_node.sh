# Shared by the metrics and top tests: a `shoal server --memory --plain-http`
# on a free loopback port (SHOAL_ADDR is its host:port), and nodes that register and heartbeat with telemetry the way
# an agent does (src/agent/protocol.cc), by curl. The caller sets SHOAL and
# TMP and kills $SERVER_PID on exit.

# These nodes beat only when a test says so, and a sanitizer build on a loaded
# machine can take minutes between two beats: the node timeout is an hour, so
# that no node is declared down (and its jobs failed) in the middle of a test.
start_memory_server() {  # start_memory_server [server flags...]
  "$SHOAL" server --memory --plain-http --socket none --listen 127.0.0.1:0 --node-timeout 1h \
    "$@" > "$TMP/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 200); do
    grep -qs "admin token" "$TMP/server.log" && break
    sleep 0.05
  done
  SHOAL_ADDR=$(grep -o '127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
  SHOAL_SERVER=http://$SHOAL_ADDR
  SHOAL_TOKEN=$(sed -n 's/.*admin token: *//p' "$TMP/server.log" | head -1)
  export SHOAL_SERVER SHOAL_TOKEN
  if [ -z "$SHOAL_ADDR" ] || [ -z "$SHOAL_TOKEN" ]; then
    echo "FAIL the server did not start"; cat "$TMP/server.log"; exit 1
  fi
}

api() {  # api METHOD PATH [BODY]
  curl -sS -f -X "$1" -H "Authorization: Bearer $SHOAL_TOKEN" ${3:+-d "$3"} "$SHOAL_SERVER$2"
}

register_node() {  # register_node NAME GPUS
  gpus=""
  i=0
  while [ "$i" -lt "$2" ]; do
    [ -n "$gpus" ] && gpus="$gpus,"
    gpus="$gpus{\"index\":$i,\"uuid\":\"GPU-$1-$i\",\"model\":\"H100-SXM-80GB\",\"memory_mib\":81920}"
    i=$((i + 1))
  done
  api POST /v1/nodes/register \
    "{\"name\":\"$1\",\"address\":\"127.0.0.1:1\",\"cpus\":64,\"memory_mib\":524288,\"gpus\":[$gpus]}" > /dev/null
}

# heartbeat NAME UTIL [UTIL...]: one GPU per utilisation, in index order. The
# node reports the jobs in $HB_RUNNING (a JSON list's items, e.g.
# '{"job":1,"epoch":1}') as running: a job it leaves out is lost once the
# server's launch grace has passed, and goes back to the queue.
heartbeat() {
  name=$1; shift
  gpus=""
  i=0
  for util in "$@"; do
    [ -n "$gpus" ] && gpus="$gpus,"
    gpus="$gpus{\"index\":$i,\"healthy\":true,\"util\":$util,\"mem_copy_util\":12,\"fb_used_mib\":40960,"
    gpus="$gpus\"fb_free_mib\":40960,\"power_w\":612.5,\"temp_c\":63,\"sm_clock_mhz\":1980,\"energy_j\":123456.5,"
    gpus="$gpus\"ecc_corrected\":0,\"ecc_uncorrected\":0,\"xid_errors\":0,\"last_xid\":0,\"clock_events\":0}"
    i=$((i + 1))
  done
  api POST "/v1/nodes/$name/heartbeat" "{\"running\":[${HB_RUNNING:-}],\"events\":[],\"gpus\":[$gpus]}" > /dev/null
}
