#!/bin/sh
# Every command parses alike: `shoal <cmd> --help` prints its usage and
# options (exit 0), and a usage error is one line "shoal <cmd>: <what> (shoal
# <cmd> --help)" (exit 2), told before anything is sent. No server runs here:
# SHOAL_SERVER points at a closed port, so a command that got past its parser
# exits 3 ("cannot reach").
set -u
SHOAL=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"
export SHOAL_SERVER=http://127.0.0.1:1 SHOAL_TOKEN=shoal_0123456789ab_0000000000000000000000000000000000000000
export HOME="$TMP/home"

check "top-level help" 0 "shoal <command> --help" -- "$SHOAL" --help
check "unknown command" 2 "shoal: unknown command 'bogus' (shoal --help)" -- "$SHOAL" bogus

# Each command that `shoal --help` lists.
COMMANDS=$("$SHOAL" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ "$(echo "$COMMANDS" | wc -w)" -ge 20 ] || { echo "FAIL too few commands in shoal --help: $COMMANDS"; exit 1; }
for cmd in $COMMANDS; do
  check "$cmd --help" 0 "Usage: shoal $cmd" -- "$SHOAL" "$cmd" --help
  check "$cmd --help lists options" 0 "Options:" -- "$SHOAL" "$cmd" --help
  check "$cmd unknown option" 2 "^shoal $cmd: .*--no-such-option.* (shoal $cmd --help)$" -- \
    "$SHOAL" "$cmd" --no-such-option
done
# Help goes to stdout, errors to stderr.
check "help on stdout" 0 "" -- sh -c "'$SHOAL' queue --help 2>/dev/null | grep -q 'Usage: shoal queue'"
check "error on stderr" 0 "" -- sh -c "'$SHOAL' queue --bad 2>&1 >/dev/null | grep -q 'shoal queue --help'"

# The commands that talk to the server take the same client flags.
for cmd in submit queue show cancel hold release requeue priority logs history nodes top drain \
  resume token partition account; do
  check "$cmd has the client flags" 0 "--server ADDRESS" -- "$SHOAL" "$cmd" --help
done

# Positionals and values are checked before anything is sent.
check "show needs a job" 2 "shoal show: JOB is required (shoal show --help)" -- "$SHOAL" show
check "show checks the id" 2 "'abc' is not a job id" -- "$SHOAL" show abc
check "cancel checks every id" 2 "'0' is not a job id" -- "$SHOAL" cancel 1 0
check "show takes one job" 2 "(shoal show --help)" -- "$SHOAL" show 1 2
check "drain needs a reason" 2 "--reason is required" -- "$SHOAL" drain n1
check "queue takes no words" 2 "(shoal queue --help)" -- "$SHOAL" queue extra
check "history --days positive" 2 "--days: '0' is not a positive number of days (shoal history --help)" -- "$SHOAL" history --days 0
check "priority is a number" 2 "'high' is not a whole number" -- "$SHOAL" priority 1 high
check "top --sort" 2 "--sort is util, mem, power, temp or node, not 'speed' (shoal top --help)" -- \
  "$SHOAL" top --sort speed
check "top --interval" 2 "--interval is 0.2 to 3600 seconds" -- "$SHOAL" top --interval 0
check "a value is needed" 2 "(shoal queue --help)" -- "$SHOAL" queue --user
check "token needs a verb" 2 "(shoal token --help)" -- "$SHOAL" token
check "token verb help" 0 "Usage: shoal token create" -- "$SHOAL" token create --help
check "token create needs --user" 2 "--user is required" -- "$SHOAL" token create
check "partition needs a verb" 2 "(shoal partition --help)" -- "$SHOAL" partition
check "partition verb help" 0 "Usage: shoal partition set" -- "$SHOAL" partition set --help
check "partition set help lists its options" 0 "--max-time TIME" -- "$SHOAL" partition set --help
check "partition show needs a name" 2 "NAME is required" -- "$SHOAL" partition show
check "partition set --max-time" 2 "^shoal partition: --max-time: '1x' is not a time" -- \
  "$SHOAL" partition set gpu --max-time 1x
check "partition set --up --down" 2 "--up excludes --down (shoal partition --help)" -- \
  "$SHOAL" partition set gpu --up --down
check "account needs a verb" 2 "(shoal account --help)" -- "$SHOAL" account
check "account verb help" 0 "Usage: shoal account set" -- "$SHOAL" account set --help
check "account set --shares" 2 "--shares: '-1' is not a number more than 0" -- \
  "$SHOAL" account set a --shares=-1

# Past the parser: the options in every place and spelling they had.
check "options after the job" 3 "cannot reach" -- "$SHOAL" show 1 --json
check "short options" 3 "cannot reach" -- "$SHOAL" queue -u bob -t pending -a
check "attached values" 3 "cannot reach" -- "$SHOAL" history --user=bob --days=2 --limit=5
check "logs flags" 3 "cannot reach" -- "$SHOAL" logs 1 -f -e
check "a negative priority" 3 "cannot reach" -- "$SHOAL" priority 1 -5
check "client flags after the verb" 3 "cannot reach" -- "$SHOAL" token list --json
check "partition set: every option" 3 "cannot reach" -- "$SHOAL" partition set gpu --default \
  --down --max-time=unlimited --default-time 1-00:00 --max-nodes 4 --max-gpus 32 --accounts a,b \
  --priority-tier 1 --idle-util-pct 2.5 --idle-minutes 0 --idle-action cancel --no-require-acceptance
check "account set: every option" 3 "cannot reach" -- "$SHOAL" account set a --shares 0.5 --max-gpus 0 --json
check "--server is read" 3 "127.0.0.1:2" -- "$SHOAL" nodes --server http://127.0.0.1:2
check "top --sort=" 3 "cannot reach" -- "$SHOAL" top --once --sort=temp --interval=1

# submit: sbatch's options (one table, also read from #SBATCH lines), the
# client flags anywhere before the command, and the command's own words.
check "submit help lists sbatch options" 0 "-N,--nodes N" -- "$SHOAL" submit --help
check "submit help lists --gres" 0 "--gres gpu\[:TYPE\]\[:N\]" -- "$SHOAL" submit -h
check "submit help tells of directives" 0 "#SBATCH" -- "$SHOAL" submit --help
check "submit unknown option" 2 "did you mean --partition?) (shoal submit --help)" -- \
  "$SHOAL" submit --partiton gpu --wrap true
check "submit option with another way" 2 "has no meaning in Shoal: give the node names" -- "$SHOAL" submit -F hosts --wrap true
check "submit option without value" 2 "shoal submit: -J needs a value (shoal submit --help)" -- \
  "$SHOAL" submit -J
check "submit --server without value" 2 "--server needs a value" -- "$SHOAL" submit --server
check "submit nothing to run" 2 "nothing to run" -- "$SHOAL" submit -G 1
check "submit --server between options" 3 "127.0.0.1:2" -- \
  "$SHOAL" submit -G1 --server http://127.0.0.1:2 -J x --wrap true
check "submit --help as a value" 3 "cannot reach" -- "$SHOAL" submit -J --help --wrap true
check "submit command keeps its flags" 3 "cannot reach" -- "$SHOAL" submit -G 1 python3 t.py --help
check "submit after --" 3 "cannot reach" -- "$SHOAL" submit -- echo --server x --help
printf '#!/bin/sh\n#SBATCH --gpus=1\n#SBATCH --frobnicate=n1\necho hi\n' > "$TMP/job.sh"
check "submit script error" 2 "job.sh:3: option --frobnicate has no meaning in Shoal" -- \
  "$SHOAL" submit "$TMP/job.sh"
printf '#!/bin/sh\n#SBATCH --gpus=1\necho hi\n' > "$TMP/ok.sh"
check "submit script arguments: the script's" 3 "cannot reach" -- \
  "$SHOAL" submit "$TMP/ok.sh" one
check "submit options after the script: the script's, with a note" 3 \
  "note: '-N' comes after .*ok.sh: it is the script's argument" -- "$SHOAL" submit "$TMP/ok.sh" -N 2
check "submit script" 3 "cannot reach" -- "$SHOAL" submit --json "$TMP/ok.sh"
exit $fail
