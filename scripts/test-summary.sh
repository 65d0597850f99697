#!/bin/sh
# Prints what a ctest run skipped and why, from its JUnit report
# (ctest --output-junit FILE), after the totals:
#   scripts/test-summary.sh build/release/junit.xml
#
# A test may skip only for a missing piece of the machine, and says which
# with a tag at the start of its message, optionally after "SKIP" or "SKIP:"
# (CONTRIBUTING.md, "Skips"):
#   [hardware]  a GPU or other device is absent
#   [privilege] root, cgroups or another privilege is missing
#   [program]   an optional program is absent (chromium, prometheus, ...)
# With CI=true the script exits 1 when a skip carries no allowed tag (a test
# skipped for any other reason hides a failure). SHOAL_ALLOWED_SKIPS
# overrides the allowed tags (default "hardware privilege program").
set -u
REPORT=${1:?usage: test-summary.sh JUNIT_XML}
ALLOWED=${SHOAL_ALLOWED_SKIPS:-hardware privilege program}
if [ ! -f "$REPORT" ]; then
  echo "test-summary: no report at $REPORT" >&2
  exit 1
fi
awk -v allowed=" $ALLOWED " -v ci="${CI:-}" '
function unescape(s) {
  gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s)
  gsub(/&#10;/, " ", s); gsub(/&amp;/, "\\&", s)
  return s
}
function attr(line, name,   m) {
  if (match(line, name "=\"[^\"]*\"")) return substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 3)
  return ""
}
# The reason of the skip being read: the line after gtest'"'"'s "Skipped" (the
# GTEST_SKIP message), else the first line that starts with a tag (a shell
# test'"'"'s), else the last line of output, else ctest'"'"'s own note.
function finish_skip(   tag) {
  reason = after_skipped != "" ? after_skipped : tagged != "" ? tagged : last != "" ? last : "(no message: " note ")"
  tag = ""
  if (match(reason, /^\[[a-z-]+\]/)) tag = substr(reason, 2, RLENGTH - 2)
  n_skipped++
  ok = tag != "" && index(allowed, " " tag " ") > 0
  if (!ok) bad++
  lines[n_skipped] = sprintf("  %s %s: %s", ok ? " " : "!", name, reason)
}
/<testcase / {
  name = unescape(attr($0, "name")); status = attr($0, "status")
  in_case = 1; in_out = 0; skipped = 0; tagged = ""; after_skipped = ""; last = ""; note = ""; want_next = 0
  n_tests++
  if (status == "fail") n_failed++
  if (status == "disabled") { skipped = 1; note = "disabled" }
  next
}
in_case && /<skipped / { skipped = 1; note = unescape(attr($0, "message")) }
in_case && /<system-out>/ { in_out = 1; sub(/.*<system-out>/, "") }
in_case && in_out {
  line = $0
  end = sub(/<\/system-out>.*/, "", line)
  line = unescape(line)
  if (tagged == "" && match(line, /^[ \t]*(SKIP:? )?\[[a-z-]+\] /)) { tagged = line; sub(/^[ \t]*(SKIP:? )?/, "", tagged) }
  if (want_next && after_skipped == "" && line != "") after_skipped = line
  want_next = line ~ /: Skipped$/ || line ~ /^Skipped$/
  if (line !~ /^[ \t]*$/) last = line
  if (end) in_out = 0
}
in_case && /<\/testcase>/ {
  if (skipped) finish_skip()
  in_case = 0
}
END {
  printf "\n%d tests: %d passed, %d failed, %d skipped\n", n_tests, n_tests - n_failed - n_skipped, n_failed, n_skipped
  for (i = 1; i <= n_skipped; i++) print lines[i]
  if (bad > 0) {
    k = split(allowed, tags, " "); shown = ""
    for (i = 1; i <= k; i++) shown = shown (i > 1 ? " " : "") "[" tags[i] "]"
    printf "%d skipped without an allowed tag (%s at the start of the message; CONTRIBUTING.md, \"Skips\")\n", bad, shown
    if (ci == "true") { print "CI: a test may skip only for missing hardware, privileges or an optional program"; exit 1 }
  }
}' "$REPORT"
