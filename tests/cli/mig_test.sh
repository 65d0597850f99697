#!/bin/sh
# MIG slices end to end (docs/mig.md), through `shoal up` with two simulated
# DGX H100 nodes:
# - `shoal node mig` is refused on a node that is up, or that still runs a
#   job, and for a layout the GPUs cannot take;
# - on a drained, empty node it splits GPUs 0-1 into 7 x 1g.10gb each, and
#   the node registers 14 slices and 6 whole GPUs;
# - a job that asks for two slices (--gres=gpu:1g.10gb:2) runs on them and
#   sees them in CUDA_VISIBLE_DEVICES by MIG UUID, as do --gpus=1g.10gb:1 and
#   a batch script's #SBATCH --gres=gpu:h100/1g.10gb:3; a job that names no
#   GPU type gets a whole GPU, by its driver index;
# - the agent itself refuses an order while a step runs, and an anonymous one;
# - /metrics labels the slices with GPU_I_PROFILE and GPU_I_ID;
# - `--layout none` makes the GPUs whole again.
set -u
SHOAL=$1
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
cleanup() {
  stop_up
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

printf '[server]\nmetrics_public = true\n' > "$TMP/server.toml"
start_up --nodes 2 --profile dgx-h100 --config "$TMP/server.toml"
for _ in $(seq 200); do
  [ "$("$SHOAL" nodes --all 2>/dev/null | grep -c ' up ')" -ge 2 ] && break
  sleep 0.1
done
N1=$("$SHOAL" nodes --all | awk 'NR == 2 { print $1 }')

state_of() { "$SHOAL" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {  # wait_state JOB STATE: up to 20 s
  for _ in $(seq 200); do [ "$(state_of "$1")" = "$2" ] && return 0; sleep 0.1; done
  return 1
}
gpus_of() {  # the node's GPU models, one per line
  "$SHOAL" nodes --all --json | python3 -c "
import json, sys
for n in json.load(sys.stdin)['nodes']:
    if n['name'] == '$1':
        for g in n['gpus']: print(g['model'], g.get('mig_profile', ''), g.get('device', g['index']))"
}

check "refused on a node that is up" 1 "is up: drain it first" -- "$SHOAL" node mig "$N1" --layout 7x1g.10gb
A=$("$SHOAL" submit --parsable -G 1 -t 10 -w "$N1" --wrap "sleep 300")
check "a job runs on the node" 0 "" -- wait_state "$A" running
# The agent itself refuses while a step runs, and takes orders from the controller only.
ADDRESS=$("$SHOAL" nodes --all --json | python3 -c "import json,sys; print([n['address'] for n in json.load(sys.stdin)['nodes'] if n['name'] == '$N1'][0])")
check "the agent refuses while a step runs" 0 "job $A runs on this node" -- \
  curl -sS -X POST -H "Authorization: Bearer $(cat "$SHOAL_STATE_DIR/node.token")" \
  -d '{"layout":"7x1g.10gb"}' "http://$ADDRESS/v1/mig"
check "an anonymous order is refused" 0 "^401$" -- \
  curl -sS -o /dev/null -w '%{http_code}' -X POST -d '{"layout":"none"}' "http://$ADDRESS/v1/mig"
"$SHOAL" drain "$N1" --reason "MIG for inference" > /dev/null
check "refused while a job runs there" 1 "still runs job $A" -- "$SHOAL" node mig "$N1" --layout 7x1g.10gb
"$SHOAL" cancel "$A" > /dev/null
wait_state "$A" cancelled
check "a layout the GPUs cannot take is refused" 1 "a count is 1 to 7" -- "$SHOAL" node mig "$N1" --layout 8x1g.10gb
check "a profile the model lacks is refused" 1 "no MIG profile '1g.5gb'" -- "$SHOAL" node mig "$N1" --layout 1g.5gb
check "GPUs 0-1 split into 7 x 1g.10gb" 0 "14 x H100-SXM-80GB/1g.10gb" -- \
  "$SHOAL" node mig "$N1" --layout 7x1g.10gb --gpus 0-1
cp "$TMP/out" "$TMP/split"
check "six GPUs stay whole" 0 "6 x H100-SXM-80GB$" -- cat "$TMP/split"
check "shoal nodes shows the slices" 0 "0/20 *H100-SXM-80GB (MIG 14x1g.10gb)" -- "$SHOAL" nodes --all
check "the node lists its slices" 0 "H100-SXM-80GB/1g.10gb 1g.10gb 1" -- gpus_of "$N1"
check "whole GPUs keep their driver index" 0 "^H100-SXM-80GB  7$" -- gpus_of "$N1"
"$SHOAL" resume "$N1" > /dev/null

S=$("$SHOAL" submit --parsable --gres=gpu:1g.10gb:2 -t 10 --wrap 'echo "CVD=$CUDA_VISIBLE_DEVICES"')
check "a job asking for two slices runs" 0 "" -- wait_state "$S" completed
check "on the partitioned node" 0 "$N1" -- "$SHOAL" show "$S"
check "and sees its two slices by MIG UUID" 0 "^CVD=MIG-[0-9a-f-]*,MIG-[0-9a-f-]*$" -- "$SHOAL" logs "$S"
G=$("$SHOAL" submit --parsable --gpus=1g.10gb:1 -t 10 --wrap 'echo "CVD=$CUDA_VISIBLE_DEVICES"')
check "--gpus=PROFILE:N asks for slices too" 0 "" -- wait_state "$G" completed
check "and sees one" 0 "^CVD=MIG-[0-9a-f-]*$" -- "$SHOAL" logs "$G"
check "#SBATCH --gres names a profile" 0 "" -- sh -c "printf '#!/bin/sh\n#SBATCH --gres=gpu:h100/1g.10gb:3\n#SBATCH -t 10\necho \"CVD=\$CUDA_VISIBLE_DEVICES\"\n' > '$TMP/slices.sh'"
B=$("$SHOAL" submit --parsable "$TMP/slices.sh")
check "a batch script's three slices" 0 "" -- wait_state "$B" completed
check "are three MIG UUIDs" 0 "^CVD=MIG-[0-9a-f-]*,MIG-[0-9a-f-]*,MIG-[0-9a-f-]*$" -- "$SHOAL" logs "$B"
W=$("$SHOAL" submit --parsable -G 1 -t 10 -w "$N1" --wrap 'echo "CVD=$CUDA_VISIBLE_DEVICES"')
check "a job naming no GPU type runs there too" 0 "" -- wait_state "$W" completed
check "on a whole GPU, by its driver index" 0 "^CVD=[2-7]$" -- "$SHOAL" logs "$W"
check "--test-only: slices are not whole GPUs" 1 "" -- \
  "$SHOAL" submit --test-only -w "$N1" -G 8 -t 10 --wrap true
for _ in $(seq 100); do
  curl -sS "$SHOAL_SERVER/metrics" 2>/dev/null | grep -q 'GPU_I_PROFILE="1g.10gb"' && break
  sleep 0.1
done
check "metrics label the slices as dcgm-exporter does" 0 \
  'DCGM_FI_DEV_FB_USED{gpu="1",UUID="MIG-[0-9a-f-]*",device="nvidia1",modelName="H100-SXM-80GB/1g.10gb",GPU_I_PROFILE="1g.10gb",GPU_I_ID="[1-7]"' -- \
  curl -sS "$SHOAL_SERVER/metrics"

"$SHOAL" drain "$N1" --reason "whole again" > /dev/null
check "--layout none makes them whole again" 0 "8 x H100-SXM-80GB$" -- "$SHOAL" node mig "$N1" --layout none
check "the node lists 8 whole GPUs" 0 "" -- sh -c "[ \$(\"$SHOAL\" nodes --all --json | python3 -c \"import json,sys; print([len(n['gpus']) for n in json.load(sys.stdin)['nodes'] if n['name'] == '$N1'][0])\") = 8 ]"
BOB=$("$SHOAL" token create --user bob --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
check "only admins re-partition" 4 "only admins re-partition GPUs" -- \
  env SHOAL_TOKEN="$BOB" "$SHOAL" node mig "$N1" --layout none
exit $fail
