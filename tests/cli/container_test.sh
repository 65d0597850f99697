#!/bin/sh
# Jobs in containers (--container-image, pyxis' options) through a real
# server and two real agents on loopback, as an ordinary user: a tiny image
# made here from Debian's busybox-static, found by name in the nodes' image
# folder or as the user's own file, unpacked once per node and user, run
# rootless under crun as the user (and, on one node, under runc as root with
# the user inside). Then what a hostile user would try: images and mounts the
# user cannot read, writes to the image, privileges. And `shoal up` runs one.
# Needs root (throwaway users), crun, runc and busybox-static; exits 77
# otherwise.
set -u
SHOAL=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP [privilege] container jobs need root (the agent runs the runtime)"
  exit 77
fi
for tool in crun runc busybox; do
  command -v "$tool" > /dev/null || { echo "SKIP [program] $tool is not installed"; exit 77; }
done
# The rootless runtime makes a user namespace as the job's user.
if ! setpriv --reuid=65534 --regid=65534 --clear-groups unshare --user true 2> /dev/null; then
  echo "SKIP [kernel] unprivileged user namespaces are refused here (shoal doctor says which sysctl)"
  exit 77
fi
TMP=$(mktemp -d)
chmod 755 "$TMP"
ALICE=shoalctr$$
cleanup() {
  [ -n "${AGENT2_PID:-}" ] && kill "$AGENT2_PID" 2>/dev/null && wait "$AGENT2_PID" 2>/dev/null
  [ -n "${AGENT3_PID:-}" ] && kill "$AGENT3_PID" 2>/dev/null && wait "$AGENT3_PID" 2>/dev/null
  [ -n "${AGENT4_PID:-}" ] && kill "$AGENT4_PID" 2>/dev/null && wait "$AGENT4_PID" 2>/dev/null
  stop_cluster
  stop_up
  userdel "$ALICE" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../security/lib.sh"

# The image: busybox and its applets, and a file that says which image it is.
ROOTFS="$TMP/rootfs"
mkdir -p "$ROOTFS/bin" "$ROOTFS/etc" "$ROOTFS/tmp" "$ROOTFS/proc" "$ROOTFS/dev" "$ROOTFS/sys"
cp "$(command -v busybox)" "$ROOTFS/bin/busybox"
for applet in sh cat id ls echo pwd sleep test grep touch env printenv tr; do
  ln -s busybox "$ROOTFS/bin/$applet"
done
echo "ID=shoal-test-image" > "$ROOTFS/etc/os-release"
chmod 1777 "$ROOTFS/tmp"
mkdir -p "$TMP/images"
tar -C "$ROOTFS" -czf "$TMP/images/bbox.tar.gz" .
# A hostile image: its /etc/passwd and /etc/group lead to host files (the
# agent, root, adds the job's user to them: it must stay in the image).
echo "victim-$$" > "$TMP/victim"
cp -a "$ROOTFS" "$TMP/evil"
ln -s "$TMP/victim" "$TMP/evil/etc/passwd"
ln -s "../../../../../../../..$TMP/victim" "$TMP/evil/etc/group"
tar -C "$TMP/evil" -czf "$TMP/images/evil.tar.gz" .

HOME_A="$TMP/alice"
useradd -M -d "$HOME_A" -s /bin/sh "$ALICE" || { echo "FAIL useradd $ALICE"; exit 1; }
mkdir -p "$TMP/hook"
chown "$ALICE" "$TMP/hook"
mkdir -p "$HOME_A/data"
echo "input-$$" > "$HOME_A/data/x"
cp "$TMP/images/bbox.tar.gz" "$HOME_A/mine.tar.gz"
chown -R "$ALICE" "$HOME_A"
# What the user may not reach: a root-only folder with an image and a file.
mkdir -m 700 "$TMP/secret"
cp "$TMP/images/bbox.tar.gz" "$TMP/secret/img.tar.gz"
echo "secret-$$" > "$TMP/secret/file"
chmod 644 "$TMP/secret/file"

# A CDI spec as the NVIDIA container toolkit writes one (nvidia-ctk cdi
# generate), with stand-ins: each GPU's device file (a copy of /dev/null's
# numbers), a "driver library" to bind in, a variable and a hook (which
# reads the container's state from its stdin, as OCI hooks do: runc passes
# on to the task a SIGPIPE it gets from a hook that does not; a rootless
# runtime runs it as the job's user, who may write to the file).
mkdir -p "$TMP/cdi" "$TMP/driver"
echo "fake-libcuda-$$" > "$TMP/driver/libcuda.so.1"
{
  echo "cdiVersion: 0.5.0"
  echo "kind: nvidia.com/gpu"
  echo "devices:"
  for i in 0 1 2 3 4 5 6 7; do
    printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia-fake%s\n      hostPath: /dev/null\n' "$i" "$i"
  done
  echo "containerEdits:"
  echo "  env: [NVIDIA_CDI_TEST=on]"
  echo "  mounts:"
  echo "  - {hostPath: $TMP/driver/libcuda.so.1, containerPath: /usr/lib/libcuda.so.1, options: [ro, nosuid, nodev, bind]}"
  echo "  hooks:"
  echo "  - {hookName: createRuntime, path: /bin/sh, args: [sh, -c, 'cat > /dev/null; echo ran >> $TMP/hook/ran']}"
} > "$TMP/cdi/nvidia.yaml"
chmod 644 "$TMP/cdi/nvidia.yaml"

# Stand-ins for the GPUs' device files (the NVIDIA major; no driver behind
# them: opening one that the device cgroup allows fails with ENXIO).
mkdir -p "$TMP/dev"
for i in 0 1 2 3 4 5 6 7; do mknod "$TMP/dev/nvidia$i" c 195 "$i"; done

start_cluster --heartbeat 200ms --image-dir "$TMP/images" --cdi-dirs "$TMP/cdi" \
  --gpu-device-path "$TMP/dev/nvidia%d"
"$SHOAL" agent --server "$SHOAL_SERVER" --token-file "$SHOAL_STATE_DIR/node.token" --name n2 \
  --listen 127.0.0.1:0 --state-dir "$TMP/agent2" --gpus simulated:dgx-h100 --heartbeat 200ms \
  --image-dir "$TMP/images" --cdi-dirs "$TMP/cdi" --gpu-device-path "$TMP/dev/nvidia%d" \
  > "$TMP/agent2.log" 2>&1 &
AGENT2_PID=$!
for _ in $(seq 100); do "$SHOAL" nodes 2>/dev/null | grep -q '^n2 *up' && break; sleep 0.05; done
TOKEN=$(user_token "$ALICE")
as_alice() { env SHOAL_TOKEN="$TOKEN" "$SHOAL" "$@"; }
submit() {  # prints the job id
  as_alice submit -D "$HOME_A" "$@" 2>&1 | sed -n 's/^Submitted job \([0-9]*\).*/\1/p'
}
job_state() { as_alice show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {  # wait_state <job> <state pattern>
  for _ in $(seq 300); do job_state "$1" | grep -Eq "$2" && return 0; sleep 0.2; done
  echo "FAIL job $1 never reached $2 (it is $(job_state "$1"))"
  as_alice show "$1"
  fail=1
}
# finish <job> <state pattern>: waits for it, then keeps what `shoal logs`
# and `shoal show` say of it in $TMP/log.<job> and $TMP/show.<job> (each
# CLI call is slow under the sanitizers: once per job).
finish() {
  wait_state "$1" "$2"
  as_alice logs "$1" > "$TMP/log.$1" 2>&1
  as_alice show "$1" > "$TMP/show.$1" 2>&1
}

# The jobs of 1 and 2 run at once (they are independent), then each is
# checked.
# 1. By name from the image folder: the image's files, the user's uid, the
#    job's folder as the working folder, the job's GPUs and Shoal's variables.
J1=$(submit -G 2 --container-image=bbox --wrap 'cat /etc/os-release; echo uid=$(id -u); echo pwd=$(pwd); echo cvd=$CUDA_VISIBLE_DEVICES jobid=$SLURM_JOB_ID; test -e /usr/bin/apt-get && echo host-root-visible; cat data/x; echo uid_map=$(cat /proc/self/uid_map); echo me=$(id -un) group=$(id -gn)')
# Its GPUs' device files, and no others, are in the container, and the
# device cgroup lets it open them (ENXIO: no driver behind the stand-ins).
J_DEV=$(submit -G 2 --container-image=bbox --wrap 'IFS=,; set -- $CUDA_VISIBLE_DEVICES; IFS=" "; echo "gpus=$(ls /dev | grep "^nvidia[0-9]" | tr "\n" " ")want=nvidia$1 nvidia$2 "; cat /dev/nvidia$2 2>&1')
# The node's CDI specs: the job's GPU's device file and no other GPU's, the
# driver's files, the variables; the hooks ran.
J_CDI=$(submit -G 1 --container-image=bbox --wrap 'echo devs=$(ls /dev | grep nvidia-fake) cvd=$CUDA_VISIBLE_DEVICES; echo cdi=$NVIDIA_CDI_TEST; cat /usr/lib/libcuda.so.1')
# 2. The user's own image file, from a batch script, with pyxis' options.
cat > "$HOME_A/job.sh" <<EOF
#!/bin/sh
#SBATCH --container-image=$HOME_A/mine.tar.gz
#SBATCH --container-mounts=$HOME_A/data:/in:ro
#SBATCH --container-workdir=/in
echo pwd=\$(pwd)
cat x
touch /in/new 2>/dev/null && echo wrote-read-only || echo read-only-holds
echo written > /tmp/mine && echo root-writable
EOF
# ...and pyxis' way: a batch script on the host whose srun steps run in the image.
cat > "$HOME_A/steps.sh" <<EOF
#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=1
echo host-side
srun --container-image=bbox --container-mounts=$HOME_A/data:/in:ro sh -c 'echo step-rank=\$SLURM_PROCID; cat /in/x; cat /etc/os-release'
EOF
chown "$ALICE" "$HOME_A/job.sh" "$HOME_A/steps.sh"
J_BATCH=$(submit "$HOME_A/job.sh")
J_SRUN=$(submit "$HOME_A/steps.sh")

finish "$J1" completed
check "runs in the image" 0 "ID=shoal-test-image" -- cat "$TMP/log.$J1"
check "as the job's user" 0 "uid=$(id -u "$ALICE")" -- cat "$TMP/log.$J1"
check "in the job's folder, mounted" 0 "pwd=$HOME_A" -- cat "$TMP/log.$J1"
check "with its GPUs and Shoal's variables" 0 "cvd=[0-7],[0-7] jobid=$J1" -- cat "$TMP/log.$J1"
check "home is mounted" 0 "input-$$" -- cat "$TMP/log.$J1"
check "the host's root is not there" 1 "" -- grep -q host-root-visible "$TMP/log.$J1"
U_A=$(id -u "$ALICE")
check "the user has a name in the image" 0 "me=$ALICE group=$(id -gn "$ALICE")" -- cat "$TMP/log.$J1"
check "rootless: a user namespace that maps only the user" 0 "uid_map= *$U_A $U_A 1\$" -- cat "$TMP/log.$J1"

finish "$J_DEV" "completed|failed"
check "only the job's GPU device files are there" 0 'gpus=\(nvidia[0-7] nvidia[0-7] \)want=\1$' -- cat "$TMP/log.$J_DEV"
check "...and the device cgroup lets it open them" 0 "No such device or address" -- cat "$TMP/log.$J_DEV"

finish "$J_CDI" completed
check "CDI: the job's GPU's device file only" 0 'devs=nvidia-fake\([0-7]\) cvd=\1$' -- cat "$TMP/log.$J_CDI"
check "CDI: the variables" 0 "cdi=on" -- cat "$TMP/log.$J_CDI"
check "CDI: the driver's library is bound in" 0 "fake-libcuda-$$" -- cat "$TMP/log.$J_CDI"
check "CDI: the hooks ran" 0 "ran" -- cat "$TMP/hook/ran"

finish "$J_BATCH" completed
check "a batch script runs in the user's image" 0 "pwd=/in" -- cat "$TMP/log.$J_BATCH"
check "a read-only mount stays read-only" 0 "read-only-holds" -- cat "$TMP/log.$J_BATCH"
check "the container's root is writable where the image lets the user" 0 "root-writable" -- cat "$TMP/log.$J_BATCH"
J_EVIL=$(submit --container-image=evil --wrap 'echo ran-evil')
# ...but what a job writes there is its own: the next job sees the image.
J=$(submit --container-image="$HOME_A/mine.tar.gz" --wrap 'test -e /tmp/mine && echo leaked || echo clean')
finish "$J_SRUN" completed
check "srun runs its step in the image from a host batch script" 0 "step-rank=1" -- cat "$TMP/log.$J_SRUN"
check "...every task of it" 0 "step-rank=0" -- cat "$TMP/log.$J_SRUN"
check "...with its mounts" 0 "input-$$" -- cat "$TMP/log.$J_SRUN"
finish "$J" completed
check "writes do not reach the cached image" 0 "clean" -- cat "$TMP/log.$J"
finish "$J_EVIL" completed
check "an image whose /etc/passwd leads out still runs" 0 "ran-evil" -- cat "$TMP/log.$J_EVIL"
check "...and the host file it leads to is untouched" 0 "" -- test "$(cat "$TMP/victim")" = "victim-$$"

# 3. Two nodes, one image (`shoal run`: a job whose command is every
#    task's): each task runs in it and gets the torch variables.
# (from the user's home: the allocation's own output goes to the folder it is made from)
from_home() { (cd "$HOME_A" && as_alice "$@"); }
check "two nodes run in the image" 0 "rank=1 world=2 node_rank=1 master=127.0.0.1:[0-9]* ID=shoal-test-image" -- \
  from_home run -N 2 --ntasks-per-node=1 -D "$HOME_A" --container-image=bbox -- \
  sh -c 'echo rank=$RANK world=$WORLD_SIZE node_rank=$NODE_RANK master=$MASTER_ADDR:$MASTER_PORT $(cat /etc/os-release)'
cp "$TMP/out" "$TMP/two.out"
check "...rank 0 too, with the master's address" 0 "rank=0 world=2 node_rank=0 master=127.0.0.1:[0-9]* ID=shoal" -- cat "$TMP/two.out"

# srun --pty in an image (pyxis' interactive way): a terminal, under the
# rootless runtime.
printf '%s\n' '[ -t 0 ] && [ -t 1 ] && echo "a terminal: $((6*7)) $(cat /etc/os-release)"' 'exit 3' > "$TMP/typed"
chmod 644 "$TMP/typed"
check "run --pty in an image: a terminal, the step's exit code" 3 "a terminal: 42 ID=shoal-test-image" -- \
  sh -c "cd '$HOME_A' && env SHOAL_TOKEN='$TOKEN' '$SHOAL' run --pty --container-image=bbox /bin/sh < '$TMP/typed'"

# Tasks of a node end one by one: each task's end leaves the others running
# (runc empties the cgroup of a container whose task ended).
check "tasks that end early leave the others running" 0 "task=2 ended" -- \
  from_home run -N 1 -n 3 --container-image=bbox -- sh -c 'sleep 0.$((RANK * 4)); echo task=$RANK ended'
cp "$TMP/out" "$TMP/three.out"
check "...all of them" 0 "task=0 ended" -- cat "$TMP/three.out"

# 4. What fails fails at launch, with a reason, not a hang.
J_NOIMG=$(submit --container-image=no-such-image --wrap true)
J_SECRET=$(submit --container-image="$TMP/secret/img.tar.gz" --wrap true)
J_MOUNT=$(submit --container-image=bbox --container-mounts="$TMP/secret/file:/s" --wrap 'cat /s')
finish "$J_NOIMG" failed
check "a missing image is the job's failure reason" 0 "is not on this node" -- cat "$TMP/show.$J_NOIMG"
finish "$J_SECRET" failed
check "an image the user cannot read is refused" 0 "Permission denied (as user '$ALICE')" -- cat "$TMP/show.$J_SECRET"
finish "$J_MOUNT" failed
check "a mount the user cannot reach is refused" 0 "container mount $TMP/secret/file" -- cat "$TMP/show.$J_MOUNT"
check "...and nothing leaked" 1 "" -- grep -q "secret-$$" "$TMP/log.$J_MOUNT"
check "a mount that climbs is refused at submit" 2 "climbs" -- \
  as_alice submit --container-image=bbox --container-mounts=/tmp/../etc:/e --wrap true

# ...and so does a node without the runtime.
"$SHOAL" agent --server "$SHOAL_SERVER" --token-file "$SHOAL_STATE_DIR/node.token" --name n3 \
  --listen 127.0.0.1:0 --state-dir "$TMP/agent3" --gpus simulated:dgx-h100 --heartbeat 200ms \
  --label no-runtime --container-runtime /nonexistent/runc > "$TMP/agent3.log" 2>&1 &
AGENT3_PID=$!
# ...and a node whose runtime runs as root (runc, container_rootless = false).
"$SHOAL" agent --server "$SHOAL_SERVER" --token-file "$SHOAL_STATE_DIR/node.token" --name n4 \
  --listen 127.0.0.1:0 --state-dir "$TMP/agent4" --gpus simulated:dgx-h100 --heartbeat 200ms \
  --label root-runtime --container-runtime runc --container-rootless false \
  --image-dir "$TMP/images" --gpu-device-path "$TMP/dev/nvidia%d" > "$TMP/agent4.log" 2>&1 &
AGENT4_PID=$!
for node in n3 n4; do
  for _ in $(seq 100); do "$SHOAL" nodes 2>/dev/null | grep -q "^$node *up" && break; sleep 0.05; done
done
J=$(submit -C no-runtime --container-image=bbox --wrap true)
J_ROOT=$(submit -C root-runtime -G 1 --container-image=bbox --wrap 'cat /etc/os-release; echo uid=$(id -u) uid_map=$(cat /proc/self/uid_map); ls /dev | grep "^nvidia[0-7]"; grep CapEff /proc/self/status')
finish "$J" failed
check "a missing runtime is the job's failure reason" 0 "runtime '/nonexistent/runc' is not installed" -- cat "$TMP/show.$J"
check "--pty under a root runtime is refused with the reason" 1 "only under the rootless runtime" -- \
  sh -c "cd '$HOME_A' && env SHOAL_TOKEN='$TOKEN' '$SHOAL' run -C root-runtime --pty --container-image=bbox /bin/sh < /dev/null"
finish "$J_ROOT" completed
check "runc as root runs the image" 0 "ID=shoal-test-image" -- cat "$TMP/log.$J_ROOT"
check "...the task as the user, in no user namespace" 0 "uid=$U_A uid_map= *0 0 4294967295" -- cat "$TMP/log.$J_ROOT"
check "...with its GPU's device file" 0 "^nvidia[0-7]\$" -- cat "$TMP/log.$J_ROOT"
check "...and no capabilities" 0 "CapEff:.0000000000000000" -- cat "$TMP/log.$J_ROOT"
for pid in "$AGENT3_PID" "$AGENT4_PID"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
AGENT3_PID=
AGENT4_PID=

# 5. No privileges in the container: no_new_privs and no capabilities.
J=$(submit --container-image=bbox --wrap 'grep -E "^(NoNewPrivs|CapEff|CapBnd)" /proc/self/status')
finish "$J" completed
check "no new privileges" 0 "NoNewPrivs:.1" -- cat "$TMP/log.$J"
check "no capabilities" 0 "CapBnd:.0000000000000000" -- cat "$TMP/log.$J"

# 6. Cancel stops the container's processes.
J=$(submit --container-image=bbox --wrap 'echo started; sleep 300')
wait_state "$J" running
for _ in $(seq 100); do grep -qs started "$HOME_A/slurm-$J.out" && break; sleep 0.05; done
check "rootless: the runtime runs as the job's user" 0 "^$ALICE\$" -- \
  sh -c "ps -eo user:32=,args= | grep '[c]run .*shoal-$J\\.' | awk '{print \$1}' | sort -u"
as_alice cancel "$J" > /dev/null
wait_state "$J" cancelled
gone=1
for _ in $(seq 100); do pgrep -u "$ALICE" sleep > /dev/null || { gone=0; break; }; sleep 0.1; done
check "cancel stops what ran in the container" 0 "" -- test "$gone" -eq 0
# A dozen container jobs ran on n1 and n2, from three images (bbox, the
# user's own, evil): each node unpacked each image it ran at most once.
for dir in "$TMP/agent" "$TMP/agent2"; do
  check "each image was unpacked once per node ($(basename "$dir"))" 0 "" -- \
    test "$(ls -d "$dir"/images/*/rootfs | wc -l)" -le 3
done

AGENT_LOG="$TMP/agent.log"
[ "$fail" -ne 0 ] && tail -20 "$AGENT_LOG"
kill "$AGENT2_PID" 2>/dev/null && wait "$AGENT2_PID" 2>/dev/null
AGENT2_PID=
stop_cluster

# 7. `shoal up`, as root on a one-person machine: one node, then two.
rm -rf "$TMP/state"  # shoal up's own state, not the server's above
start_up --nodes 2 --image-dir "$TMP/images"
OUT=$("$SHOAL" submit --container-image=bbox -D "$TMP/work" --wrap 'cat /etc/os-release' 2>&1)
J=$(echo "$OUT" | sed -n 's/^Submitted job \([0-9]*\).*/\1/p')
for _ in $(seq 300); do grep -qs shoal-test "$TMP/work/slurm-$J.out" && break; sleep 0.2; done
[ -s "$TMP/work/slurm-$J.out" ] || { echo "$OUT"; "$SHOAL" show "$J"; }
check "shoal up runs a container job" 0 "shoal-test-image" -- cat "$TMP/work/slurm-$J.out"
check "shoal up runs a two-node container step" 0 "node_rank=1 ID=shoal-test-image" -- \
  sh -c "cd '$TMP/work' && '$SHOAL' run -N 2 --ntasks-per-node=1 --container-image=bbox -- sh -c 'echo node_rank=\$NODE_RANK \$(cat /etc/os-release)'"
exit $fail
