#!/bin/sh
# sbatch --mail-type/--mail-user through `shoal up` with a server whose
# mail_program is a stand-in sendmail that keeps what it reads: the job's
# user is mailed when it begins and ends, with Slurm's subjects; a bad type
# or an address that could be an option of the mail program is refused.
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
cat > "$TMP/sendmail" <<SCRIPT
#!/bin/sh
echo "args: \$*" >> "$TMP/mail.log"
cat >> "$TMP/mail.log"
SCRIPT
chmod +x "$TMP/sendmail"
printf '[server]\nmail_program = "%s"\n' "$TMP/sendmail" > "$TMP/server.toml"
start_up --nodes 1 --profile dgx-h100 --config "$TMP/server.toml"

check "a job that asks for mail" 0 "Submitted job" -- "$SHOAL" submit -W -J mailme \
  --mail-type=BEGIN,END --mail-user=ann@example.org -o /dev/null --wrap true
job=$(grep -o 'Submitted job [0-9]*' "$TMP/out" | grep -o '[0-9]*$')
for _ in $(seq 100); do grep -qs "Ended" "$TMP/mail.log" && break; sleep 0.1; done
check "  sendmail's flags" 0 "^args: -t -oi$" -- cat "$TMP/mail.log"
check "  to the address given" 0 "^To: ann@example.org$" -- cat "$TMP/mail.log"
check "  when it began" 0 "^Subject: Shoal Job_id=$job Name=mailme Began, Queued time " -- cat "$TMP/mail.log"
check "  and when it ended" 0 "^Subject: Shoal Job_id=$job Name=mailme Ended, Run time .*, COMPLETED, ExitCode 0$" -- \
  cat "$TMP/mail.log"
check "  shoal show tells what was asked" 0 '"mail_type": "BEGIN,END"' -- "$SHOAL" show "$job" --json
check "a job that fails, FAIL only" 1 "" -- "$SHOAL" submit -W -J bad --mail-type=FAIL -o /dev/null --wrap false
for _ in $(seq 100); do grep -qs "Name=bad Failed" "$TMP/mail.log" && break; sleep 0.1; done
check "  is mailed to its user" 0 "Name=bad Failed, Run time .*, FAILED, ExitCode 1$" -- cat "$TMP/mail.log"
check "an unknown mail type" 2 "mail type 'SOMETIMES'" -- "$SHOAL" submit --mail-type=END,SOMETIMES --wrap true
check "an address that is an option" 2 "not a mail address" -- "$SHOAL" submit --mail-type=END --mail-user=-oQ/tmp --wrap true
check "  nothing else was mailed" 0 "^3$" -- sh -c "grep -c '^Subject:' '$TMP/mail.log'"
exit $fail
