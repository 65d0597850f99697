// The API's JSON for nodes and their acceptance results (json.h).
#include <fmt/format.h>

#include "api/json.h"
#include "api/json_reader.h"

namespace shoal::api {
namespace {

// No GPU is rated above this; a node that says otherwise is refused.
constexpr double kMaxGpuRatedW = 5000;

}  // namespace

Json ToJson(const Node& n) {
  Json j;
  j["id"] = n.id.value();
  j["name"] = n.name;
  j["address"] = n.address;
  j["state"] = std::string(NodeStateName(n.state));
  if (!n.state_reason.empty()) j["state_reason"] = n.state_reason;
  j["cpus"] = CpusFromMilli(n.cpu_milli);
  j["memory_mib"] = n.memory_mib;
  Json gpus = Json::array();
  for (const Gpu& g : n.gpus) {
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"model", g.model},
                    {"memory_mib", g.memory_mib},
                    {"nvlink_island", g.nvlink_island},
                    {"numa_node", g.numa_node},
                    {"pcie_switch", g.pcie_switch},
                    {"healthy", g.healthy}});
    if (g.rated_w > 0) gpus.back()["rated_w"] = g.rated_w;
    if (g.device >= 0 && g.device != g.index) gpus.back()["device"] = g.device;
    if (g.IsMigSlice()) {
      gpus.back()["mig_profile"] = g.mig_profile;
      gpus.back()["mig_gi"] = g.mig_gi;
      gpus.back()["mig_ci"] = g.mig_ci;
    }
  }
  j["gpus"] = gpus;
  j["labels"] = n.labels;
  j["partitions"] = n.partitions;
  j["place"] = n.place.spine.empty() && n.place.leaf.empty() ? "" : n.place.ToString();
  if (n.acceptance) j["acceptance"] = ToJson(*n.acceptance);
  if (!n.credential.empty()) j["credential"] = n.credential;
  if (!n.boot_id.empty()) j["boot_id"] = n.boot_id;
  return j;
}

Json ToJson(const AcceptanceResult& a) {
  Json j = {{"passed", a.passed},
            {"summary", a.summary},
            {"time", TimeToJson(a.time)},
            {"failures", a.failures}};
  if (a.job != 0) j["job"] = a.job;
  return j;
}

Result<AcceptanceResult> AcceptanceFromJson(const Json& j) {
  AcceptanceResult a;
  ObjectReader f(j, "acceptance");
  Json passed;
  double time = 0;
  Json failures, report;
  f.Optional("passed", &passed);
  f.Optional("summary", &a.summary);
  f.Optional("time", &time);
  f.Optional("failures", &failures);
  f.Optional("job", &a.job);
  f.Optional("report", &report);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (!passed.is_boolean())
    return InvalidArgument("acceptance: field 'passed' (true or false) is required");
  a.passed = passed.get<bool>();
  if (time < 0 || time > 1e11) return InvalidArgument("acceptance: 'time' must be Unix seconds");
  a.time = TimeFromJson(time);
  if (failures.is_null() && report.is_object()) failures = report.value("failures", Json());
  if (!failures.is_null()) {
    if (!failures.is_array())
      return InvalidArgument("acceptance: 'failures' must be a list of strings");
    for (const Json& line : failures) {
      if (!line.is_string())
        return InvalidArgument("acceptance: 'failures' must be a list of strings");
      if (a.failures.size() == kMaxAcceptanceFailures) break;
      a.failures.push_back(line.get<std::string>().substr(0, 1000));
    }
  }
  if (a.summary.size() > 4000) a.summary.resize(4000);
  return a;
}

Result<Node> NodeFromJson(const Json& j) {
  Node n;
  ObjectReader f(j, "node");
  uint64_t id = 0;
  std::string state = "up", place;
  double cpus = 0;
  Json gpus;
  f.Optional("id", &id);
  f.Optional("name", &n.name);
  f.Optional("address", &n.address);
  f.Optional("state", &state);
  f.Optional("state_reason", &n.state_reason);
  f.Optional("cpus", &cpus);
  f.Optional("memory_mib", &n.memory_mib);
  f.Optional("gpus", &gpus);
  f.Optional("labels", &n.labels);
  f.Optional("partitions", &n.partitions);
  f.Optional("place", &place);
  Json acceptance;
  f.Optional("acceptance", &acceptance);
  f.Optional("credential", &n.credential);
  f.Optional("boot_id", &n.boot_id);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (n.name.empty()) return InvalidArgument("node: a name is required");
  if (n.boot_id.size() > 64) return InvalidArgument("node: boot_id is over 64 characters");
  if (!acceptance.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(AcceptanceResult a, AcceptanceFromJson(acceptance));
    n.acceptance = std::move(a);
  }
  if (cpus < 0 || n.memory_mib < 0)
    return InvalidArgument("node: CPUs and memory cannot be negative");
  n.id = NodeId(static_cast<uint32_t>(id));
  SHOAL_ASSIGN_OR_RETURN(n.state, ParseNodeState(state));
  n.cpu_milli = MilliFromCpus(cpus);
  if (!place.empty()) {
    SHOAL_ASSIGN_OR_RETURN(n.place, NetworkPlace::Parse(place));
  }
  if (!gpus.is_null()) {
    if (!gpus.is_array()) return InvalidArgument("node: gpus must be a list");
    if (gpus.size() > kMaxGpusPerNode)
      return InvalidArgument(fmt::format("node: at most {} GPUs", kMaxGpusPerNode));
    for (const Json& g : gpus) {
      ObjectReader gf(g, fmt::format("node.gpus[{}]", n.gpus.size()));
      Gpu gpu;
      gf.Optional("index", &gpu.index);
      gf.Optional("uuid", &gpu.uuid);
      gf.Optional("model", &gpu.model);
      gf.Optional("memory_mib", &gpu.memory_mib);
      gf.Optional("nvlink_island", &gpu.nvlink_island);
      gf.Optional("numa_node", &gpu.numa_node);
      gf.Optional("pcie_switch", &gpu.pcie_switch);
      gf.Optional("healthy", &gpu.healthy);
      gf.Optional("rated_w", &gpu.rated_w);
      gf.Optional("device", &gpu.device);
      gf.Optional("mig_profile", &gpu.mig_profile);
      gf.Optional("mig_gi", &gpu.mig_gi);
      gf.Optional("mig_ci", &gpu.mig_ci);
      SHOAL_RETURN_IF_ERROR(gf.Finish());
      if (gpu.device < -1 || gpu.device >= kMaxGpusPerNode)
        return InvalidArgument(fmt::format("node: device is 0 to {}", kMaxGpusPerNode - 1));
      if (gpu.IsMigSlice() && (gpu.mig_gi < 0 || gpu.mig_ci < 0 || gpu.mig_profile.size() > 32 ||
                               gpu.model.find('/') == std::string::npos))
        return InvalidArgument(
            "node: a MIG slice has a profile of up to 32 characters, instance ids and a model "
            "'GPU/profile'");
      if (!(gpu.rated_w >= 0 && gpu.rated_w <= kMaxGpuRatedW))
        return InvalidArgument(fmt::format("node: rated_w is 0 to {} watts", kMaxGpuRatedW));
      if (gpu.index != static_cast<int>(n.gpus.size()))
        return InvalidArgument("node: GPU indices must be 0, 1, 2, ...");
      if (gpu.model.empty()) return InvalidArgument("node: every GPU needs a model");
      n.gpus.push_back(gpu);
    }
  }
  return n;
}

}  // namespace shoal::api
