# Checks deploy/grafana/*.json and deploy/prometheus/shoal-alerts{,.test}.yml
# against what Shoal serves (tests/cli/observability_assets_test.sh):
# - every dashboard is JSON with a uid, schemaVersion, the DS_PROMETHEUS
#   datasource variable that every panel and query uses, unique panel ids;
# - every metric the dashboards, rules and rule tests name (DCGM_FI_*,
#   shoal_*; a histogram's _bucket/_sum/_count as its family) is in
#   docs/metrics.md and written by src/api/prometheus.cc or
#   src/server/metrics.cc, so that renaming one breaks this check;
# - every label they select, group by or print is a label docs/metrics.md
#   names (or le, instance, job, or one a rule makes);
# - every shoal:* series they read is recorded by a rule;
# - every alert has a severity (critical, warning, info), a summary and a
#   description, and a unit test where it fires and one where it does not.
# The dashboards' queries, with Grafana's variables filled in, go to OUT as
# recording rules for `promtool check rules` (PromQL syntax).
#   python3 observability_lint.py SOURCE_DIR DEPLOY_DIR OUT
import json
import os
import re
import sys

src, deploy, out = sys.argv[1:4]
problems = []


def problem(text):
    problems.append(text)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


METRIC = re.compile(r"\b(DCGM_FI_[A-Z0-9_]+|shoal_[a-z0-9_]+)\b")
RECORDED = re.compile(r"\bshoal:[a-z0-9_:]+")
docs = read(os.path.join(src, "docs", "metrics.md"))
documented = set(METRIC.findall(docs))
doc_words = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", docs))
served = set()
for f in ("src/api/prometheus.cc", "src/server/metrics.cc"):
    served |= set(re.findall(r'"(DCGM_FI_[A-Z0-9_]+|shoal_[a-z0-9_]+)"', read(os.path.join(src, f))))
labels_known = doc_words | {"le", "instance", "job", "__name__"}


def check_metrics(where, text):
    for name in sorted(set(METRIC.findall(text))):
        family = name
        if name not in documented:
            family = re.sub(r"_(bucket|sum|count)$", "", name)
        if family not in documented:
            problem(f"{where}: {name} is not in docs/metrics.md")
        elif family not in served:
            problem(f"{where}: {name} is in docs/metrics.md but not written by the server or agent")


def check_labels(where, expr):
    names = set()
    for m in re.finditer(r"label_values\((.*),\s*(\w+)\s*\)", expr):
        names.add(m.group(2))
    bare = re.sub(r'"(\\.|[^"\\])*"', '""', expr)
    for body in re.findall(r"\{([^{}]*)\}", bare):
        names |= set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", body))
    for body in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)", bare):
        names |= {x.strip() for x in body.split(",") if x.strip()}
    for name in sorted(names - labels_known):
        problem(f"{where}: label {name} is not one docs/metrics.md names")


# The rules: alert and record rules with their expressions (a line-based
# reading of the file's own layout: `- alert:`/`- record:`, `expr:` on one
# line or as a folded/literal block).
rules_path = os.path.join(deploy, "prometheus", "shoal-alerts.yml")
rules_text = read(rules_path)
rules = []
for line in rules_text.splitlines():
    if re.match(r"^\s*#", line):
        continue
    m = re.match(r"^\s*- (alert|record):\s*(\S+)\s*$", line)
    if m:
        rules.append({"kind": m.group(1), "name": m.group(2), "body": []})
    elif re.match(r"^\s*- name:", line):
        rules.append({"kind": "group", "name": "", "body": []})
    elif rules:
        rules[-1]["body"].append(line)
for r in rules:
    expr, indent = None, None
    for line in r["body"]:
        if expr is not None and indent is not None:
            if line.strip() and len(line) - len(line.lstrip()) > indent:
                expr += " " + line.strip()
                continue
            indent = None
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if m:
            value = m.group(2).strip()
            if value in ("|", "|-", ">", ">-"):
                expr, indent = "", len(m.group(1))
            else:
                expr = value.strip("'") if value.startswith("'") else value
    r["expr"] = expr or ""
rules = [r for r in rules if r["kind"] != "group"]
alerts = sorted({r["name"] for r in rules if r["kind"] == "alert"})
records = {r["name"] for r in rules if r["kind"] == "record"}
if not alerts:
    problem(f"{rules_path}: no alerts found")
for r in rules:
    if not r["expr"]:
        problem(f"{r['kind']} {r['name']}: no expr")
    labels_known |= set(re.findall(r'count_values\s*(?:(?:by|without)\s*\([^)]*\))?\s*\(\s*"(\w+)"', r["expr"]))
    labels_known |= set(re.findall(r'label_replace\(.*?,\s*"(\w+)"', r["expr"]))
for r in rules:
    where = f"{r['kind']} {r['name']}"
    check_labels(where, r["expr"])
    body = "\n".join(r["body"])
    for name in re.findall(r"\$labels\.(\w+)", body):
        if name not in labels_known:
            problem(f"{where}: $labels.{name} is not a label docs/metrics.md names")
    if r["kind"] == "alert":
        if not re.search(r"^\s*severity:\s*(critical|warning|info)\s*$", body, re.M):
            problem(f"{where}: no severity label (critical, warning or info)")
        for key in ("summary", "description"):
            if not re.search(rf"^\s*{key}:", body, re.M):
                problem(f"{where}: no {key} annotation")
uncommented = "\n".join(x for x in rules_text.splitlines() if not x.lstrip().startswith("#"))
check_metrics(rules_path, uncommented)
for name in sorted(set(RECORDED.findall(uncommented)) - records):
    problem(f"{rules_path}: {name} is read but no rule records it")

# The rules' tests: each alert fires in one case and not in another.
tests_path = os.path.join(deploy, "prometheus", "shoal-alerts.test.yml")
tests_text = "\n".join(x for x in read(tests_path).splitlines() if not x.lstrip().startswith("#"))
fires, quiet = set(), set()
for m in re.finditer(r"\balertname:\s*(\w+)", tests_text):
    e = re.compile(r"\bexp_alerts:[ \t]*(\[\])?").search(tests_text, m.end())
    if e is None:
        problem(f"{tests_path}: {m.group(1)} has no exp_alerts")
        continue
    (quiet if e.group(1) else fires).add(m.group(1))
for name in alerts:
    if name not in fires:
        problem(f"{tests_path}: no test where {name} fires")
    if name not in quiet:
        problem(f"{tests_path}: no test where {name} stays quiet")
for name in sorted((fires | quiet) - set(alerts)):
    problem(f"{tests_path}: {name} is tested but not in the rules")
check_metrics(tests_path, tests_text)
for name in sorted(set(RECORDED.findall(tests_text)) - records):
    problem(f"{tests_path}: {name} is not recorded by a rule")

# The dashboards.
DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
exprs = []
uids = set()
grafana = os.path.join(deploy, "grafana")
dashboards = sorted(f for f in os.listdir(grafana) if f.endswith(".json"))
if len(dashboards) < 3:
    problem(f"{grafana}: {len(dashboards)} dashboards, want 3 or more")


def panels_of(items):
    for p in items:
        yield p
        yield from panels_of(p.get("panels", []))


for name in dashboards:
    path = os.path.join(grafana, name)
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except ValueError as e:
        problem(f"{path}: not JSON: {e}")
        continue
    for key in ("uid", "title"):
        if not d.get(key):
            problem(f"{path}: no {key}")
    if d.get("uid") in uids:
        problem(f"{path}: uid {d.get('uid')} is another dashboard's")
    uids.add(d.get("uid"))
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
        problem(f"{path}: schemaVersion {d.get('schemaVersion')}, want 36 or later")
    variables = d.get("templating", {}).get("list", [])
    if not any(v.get("name") == "DS_PROMETHEUS" and v.get("type") == "datasource" for v in variables):
        problem(f"{path}: no DS_PROMETHEUS datasource variable")
    for v in variables:
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        where = f"{name} variable {v.get('name')}"
        if v.get("datasource") != DS:
            problem(f"{where}: datasource is not ${{DS_PROMETHEUS}}")
        exprs.append((where, q))
    ids = set()
    for p in panels_of(d.get("panels", [])):
        where = f"{name} panel {p.get('id')} ({p.get('title')})"
        if p.get("id") in ids or not isinstance(p.get("id"), int):
            problem(f"{where}: id missing or not unique")
        ids.add(p.get("id"))
        if not all(k in p.get("gridPos", {}) for k in "xywh"):
            problem(f"{where}: no gridPos")
        if p.get("type") == "row":
            continue
        if p.get("datasource") != DS:
            problem(f"{where}: datasource is not ${{DS_PROMETHEUS}}")
        if not p.get("targets"):
            problem(f"{where}: no queries")
        for t in p.get("targets", []):
            if t.get("datasource") != DS:
                problem(f"{where} query {t.get('refId')}: datasource is not ${{DS_PROMETHEUS}}")
            if not t.get("expr", "").strip():
                problem(f"{where} query {t.get('refId')}: no expr")
                continue
            exprs.append((f"{where} query {t.get('refId')}", t["expr"]))
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")):
                if label not in labels_known:
                    problem(f"{where}: legend label {label} is not one docs/metrics.md names")

# Grafana's variables as PromQL can take them, for promtool.
with open(out, "w", encoding="utf-8") as f:
    f.write("groups:\n  - name: dashboards\n    rules:\n")
    n = 0
    for where, expr in exprs:
        check_metrics(where, expr)
        check_labels(where, expr)
        for rec in set(RECORDED.findall(expr)) - records:
            problem(f"{where}: {rec} is not recorded by shoal-alerts.yml")
        m = re.match(r"^label_values\((.*),\s*\w+\s*\)$", expr.strip())
        if m:
            expr = m.group(1)
        expr = expr.replace("$__rate_interval", "1m").replace("$__range", "1h").replace("$__interval", "1m")
        n += 1
        f.write(f"      - record: dashboard:query_{n}\n        expr: {json.dumps(expr)}\n")

for p in problems:
    print(f"FAIL {p}")
print(f"{len(alerts)} alerts, {len(records)} recording rules, {len(dashboards)} dashboards, "
      f"{len(exprs)} dashboard queries: {len(problems)} problems")
sys.exit(1 if problems else 0)
