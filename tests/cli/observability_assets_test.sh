#!/bin/sh
# deploy/prometheus and deploy/grafana (docs/deploy.md, "Prometheus and
# Grafana"): promtool checks the alert rules and runs their unit tests
# (every alert fires in one case and stays quiet in another), checks the
# example scrape configuration (a copy with its /etc/prometheus paths in a
# temporary folder), and observability_lint.py checks that the dashboards,
# rules and tests name only metrics and labels docs/metrics.md lists and
# the server or agent writes, that every alert has a test, and that the
# dashboards are well-formed JSON whose queries promtool parses. Then the
# same checks on broken copies, which must fail. Skipped (77) without
# promtool (Debian package `prometheus`) or python3.
# observability_assets_test.sh <source dir>
set -u
SRC=$1
if ! command -v promtool > /dev/null 2>&1; then
  echo "[program] promtool is not installed (apt-get install prometheus, or scripts/install-deps.sh)"
  exit 77
fi
command -v python3 > /dev/null 2>&1 || { echo "[program] python3 is not installed"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"
LINT="$(dirname "$0")/observability_lint.py"
PROM="$SRC/deploy/prometheus"

check "promtool check rules shoal-alerts.yml" 0 "SUCCESS" -- \
  promtool check rules "$PROM/shoal-alerts.yml"
check "promtool test rules shoal-alerts.test.yml" 0 "SUCCESS" -- \
  promtool test rules "$PROM/shoal-alerts.test.yml"

# The example configuration, its files under $TMP/etc instead of /etc/prometheus;
# the agents' file_sd list made as its comment says (with jq, when here).
mkdir -p "$TMP/etc"
sed "s#/etc/prometheus/#$TMP/etc/#g" "$PROM/prometheus.yml.example" > "$TMP/etc/prometheus.yml"
cp "$PROM/shoal-alerts.yml" "$TMP/etc/"
echo "token" > "$TMP/etc/shoal.token"
: > "$TMP/etc/shoal-ca.crt"
JQ=$(sed -n "s/.*shoal nodes --all --json | jq '\(.*\)'.*/\1/p" "$PROM/prometheus.yml.example")
if command -v jq > /dev/null 2>&1 && [ -n "$JQ" ]; then
  echo '{"nodes":[{"name":"gpu01"},{"name":"gpu02"}]}' | jq "$JQ" > "$TMP/etc/shoal-nodes.json"
  check "the file_sd list the example's jq makes" 0 '"gpu02:6821"' -- cat "$TMP/etc/shoal-nodes.json"
else
  echo '[{"targets":["gpu01:6821","gpu02:6821"]}]' > "$TMP/etc/shoal-nodes.json"
fi
check "promtool check config prometheus.yml.example" 0 "Checking $TMP/etc/shoal-alerts.yml" -- \
  promtool check config "$TMP/etc/prometheus.yml"

check "dashboards, rules and tests use served, documented metrics and labels" 0 ": 0 problems" -- \
  python3 "$LINT" "$SRC" "$SRC/deploy" "$TMP/dashboard-rules.yml"
check "promtool parses every dashboard query" 0 "SUCCESS" -- \
  promtool check rules "$TMP/dashboard-rules.yml"

# broken FILE SED: a copy of deploy/ in $TMP/bad with SED applied to FILE.
broken() {
  rm -rf "$TMP/bad"
  mkdir -p "$TMP/bad"
  cp -R "$SRC/deploy/grafana" "$SRC/deploy/prometheus" "$TMP/bad/"
  sed "$2" "$SRC/deploy/$1" > "$TMP/bad/$1"
  cmp -s "$SRC/deploy/$1" "$TMP/bad/$1" && echo "FAIL the edit '$2' changed nothing in $1" && fail=1
}
broken prometheus/shoal-alerts.yml 's/(DCGM_FI_DEV_GPU_TEMP) > 85/(DCGM_FI_DEV_GPU_TEMP) > 95/'
check "... and would catch an alert that no longer fires" 1 "alertname: ShoalGpuHot" -- \
  promtool test rules "$TMP/bad/prometheus/shoal-alerts.test.yml"
broken grafana/shoal-node.json 's/DCGM_FI_DEV_GPU_TEMP{/DCGM_FI_DEV_GPU_TEMPERATURE{/'
check "... a dashboard on a metric Shoal does not serve" 1 \
  "DCGM_FI_DEV_GPU_TEMPERATURE is not in docs/metrics.md" -- \
  python3 "$LINT" "$SRC" "$TMP/bad" "$TMP/bad-rules.yml"
broken grafana/shoal-cluster.json 's/sum by (state) (shoal_gpus{/sum by (status) (shoal_gpus{/'
check "... a dashboard on a label Shoal does not serve" 1 "label status is not one" -- \
  python3 "$LINT" "$SRC" "$TMP/bad" "$TMP/bad-rules.yml"
broken prometheus/shoal-alerts.yml 's/alert: ShoalGpuHot$/alert: ShoalGpuHotter/'
check "... an alert without a test" 1 "no test where ShoalGpuHotter fires" -- \
  python3 "$LINT" "$SRC" "$TMP/bad" "$TMP/bad-rules.yml"
exit $fail
