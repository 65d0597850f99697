// shoal nodes: every node of a small cluster; on a large one (over
// kListUpTo nodes) its nodes and GPUs by model and state, unless asked for
// every node (--all) or some (--state, --partition, --model).
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/json_fields.h"
#include "cli/server_command.h"
#include "core/cluster.h"
#include "core/strings.h"

namespace shoal::cli {

namespace {

using api::Json;

// Larger clusters are summarised unless asked: a table of 10,000 rows
// helps no one at a terminal (sinfo summarises too; sinfo -N lists).
constexpr int kListUpTo = 64;

int PrintSummary(const Json& s) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& r : s["summary"]) {
    rows.push_back({Str(r, "model").empty() ? "-" : Str(r, "model"), Str(r, "state"),
                    fmt::format("{:g}", Num(r, "nodes")),
                    fmt::format("{:g}/{:g}", Num(r, "gpus_used"), Num(r, "gpus"))});
  }
  std::printf("%s", Table({"MODEL", "STATE", "NODES", "GPUS USED"}, rows).c_str());
  std::printf("%g nodes; `shoal nodes --all` lists each, --state down those down\n",
              Num(s, "nodes"));
  return kExitOk;
}

// The node's GPU model, with its MIG slices by profile when it has any:
// "H100-SXM-80GB (MIG 14x1g.10gb)".
std::string ModelOf(const Json& gpus) {
  std::string base = "-";
  std::map<std::string, int> slices;
  for (const Json& g : gpus) {
    const std::string model = Str(g, "model");
    const size_t slash = model.find('/');
    base = model.substr(0, slash);
    if (slash != std::string::npos) slices[model.substr(slash + 1)]++;
  }
  if (slices.empty()) return base;
  std::vector<std::string> parts;
  for (const auto& [profile, count] : slices)
    parts.push_back(fmt::format("{}x{}", count, profile));
  return fmt::format("{} (MIG {})", base, Join(parts, "+"));
}

int PrintNodes(const Json& list) {
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::pair<int, int>> by_model;
  for (const Json& n : list["nodes"]) {
    const int total = static_cast<int>(n["gpus"].size());
    const int used = static_cast<int>(Num(n, "gpus_used"));
    const std::string model = ModelOf(n["gpus"]);
    const std::string base = model.substr(0, model.find(' '));
    by_model[base].first += used;
    by_model[base].second += total;
    std::vector<std::string> parts;
    for (const Json& p : n["partitions"])
      parts.push_back(p.get<std::string>());
    rows.push_back(
        {Str(n, "name"), Str(n, "state"), fmt::format("{}/{}", used, total), model,
         fmt::format("{:g}", Num(n, "cpus")),
         FormatMemoryMib(static_cast<int64_t>(Num(n, "memory_mib"))), Join(parts, ","),
         Str(n, "state_reason") +
             (n.contains("unhealthy_gpus") ? " unhealthy GPUs " + Str(n, "unhealthy_gpus") : "")});
  }
  std::printf(
      "%s",
      Table({"NODE", "STATE", "GPUS USED", "MODEL", "CPUS", "MEMORY", "PARTITIONS", "REASON"}, rows)
          .c_str());
  for (const auto& [model, uf] : by_model)
    std::printf("%s: %d of %d GPUs in use\n", model.c_str(), uf.first, uf.second);
  return kExitOk;
}

}  // namespace

int RunNodes(const std::vector<std::string>& raw) {
  ServerCommand cmd("nodes",
                    "The nodes: their state, GPUs in use, CPUs, memory and partitions. A cluster "
                    "of more than 64 nodes is summarised by GPU model and state unless --all or a "
                    "filter asks for nodes.");
  bool all = false, summary = false;
  std::string state, partition, model;
  cmd.app().add_flag("-a,--all,-N", all, "list every node, however many");
  cmd.app().add_flag("-s,--summary", summary, "nodes and GPUs by GPU model and state only");
  cmd.app()
      .add_option("-t,--state", state, "only nodes in this state (up, draining, drained, down)")
      ->type_name("STATE");
  cmd.app()
      .add_option("-p,--partition", partition, "only nodes of this partition")
      ->type_name("NAME");
  cmd.app().add_option("--model", model, "only nodes with this GPU model")->type_name("MODEL");
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (!state.empty()) {
      auto s = ParseNodeState(state);
      if (!s.ok()) return Fail("nodes", s.status());
      state = std::string(NodeStateName(*s));
    }
    for (const std::string* v : {&partition, &model}) {
      if (!v->empty() && !IsValidNodeName(*v))
        return Fail("nodes", InvalidArgument(fmt::format("'{}' is not a name", *v)));
    }
    const bool filtered = !state.empty() || !partition.empty() || !model.empty();
    if (!all && !filtered) {
      auto s = c.Get("/v1/nodes?summary=1");
      if (!s.ok()) return Fail("nodes", s.status());
      if (summary || Num(*s, "nodes") > kListUpTo) {
        if (cmd.flags().json) {
          std::printf("%s\n", s->dump(2).c_str());
          return kExitOk;
        }
        return PrintSummary(*s);
      }
    }
    std::vector<std::string> query;
    if (!state.empty()) query.push_back("state=" + state);
    if (!partition.empty()) query.push_back("partition=" + partition);
    if (!model.empty()) query.push_back("model=" + model);
    auto r = c.Get("/v1/nodes" + (query.empty() ? "" : "?" + Join(query, "&")));
    if (!r.ok()) return Fail("nodes", r.status());
    if (cmd.flags().json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    return PrintNodes(*r);
  });
}

int RunNode(const std::vector<std::string>& raw) {
  ServerCommand cmd("node", "Change one node's hardware set-up (admins).");
  CLI::App& app = cmd.app();
  std::string name, layout, gpus;
  CLI::App* mig = app.add_subcommand(
      "mig",
      "re-partition a drained node's GPUs into MIG slices (7x1g.10gb, 3g.40gb+2x2g.20gb), or "
      "join them again (none); each slice is then a GPU of its own for jobs that name its "
      "profile (--gres=gpu:1g.10gb:1)");
  mig->add_option("NODE", name, "the node's name")->required();
  mig->add_option("--layout", layout, "each GPU's slices, or none")
      ->required()
      ->type_name("LAYOUT");
  mig->add_option("--gpus", gpus, "only these GPUs, by index (0-3,5; default: all)")
      ->type_name("LIST");
  mig->fallthrough();
  app.require_subcommand(1);
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (!IsValidNodeName(name))
      return Fail("node mig", InvalidArgument(fmt::format("'{}' is not a node name", name)));
    Json body{{"layout", layout}};
    if (!gpus.empty()) {
      auto list = ParseIntRanges(gpus);
      if (!list.ok()) return Fail("node mig", list.status());
      body["gpus"] = *list;
    }
    auto r = c.Post(fmt::format("/v1/nodes/{}/mig", name), body);
    if (!r.ok()) return Fail("node mig", r.status());
    if (cmd.flags().json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    std::map<std::string, int> by_model;
    for (const Json& g : (*r)["gpus"])
      by_model[Str(g, "model")]++;
    std::printf("%s: %s\n", name.c_str(), layout.c_str());
    for (const auto& [model, count] : by_model)
      std::printf("  %d x %s\n", count, model.c_str());
    return kExitOk;
  });
}

}  // namespace shoal::cli
