#include "trace/clusters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "catalog/profiles.h"
#include "config/cluster_file.h"
#include "core/strings.h"
#include "trace/text_file.h"

namespace shoal::trace {

namespace {

// ---------------------------------------------------------------------------
// Node lists and cluster specs of the public traces.

// GPU memory of the models the node lists name, where the name or the vendor
// says it; models the traces do not disclose (G2, G3, MISC, GPU-series-N) get 0.
int64_t KnownGpuMemoryMib(std::string_view model) {
  static constexpr std::pair<std::string_view, int64_t> kKnown[] = {
      {"K80", 12 * 1024},  // per GPU of the dual-GPU board
      {"P100", 16 * 1024},
      {"T4", 16 * 1024},
      {"V100", 16 * 1024},  // PAI and Gavel V100s are the 16 GB part
      {"V100M16", 16 * 1024},
      {"V100M32", 32 * 1024},
      {"A10", 24 * 1024},
      {"A100-SXM4-80GB", 80 * 1024},
      {"A800-SXM4-80GB", 80 * 1024},
      {"H800", 80 * 1024},
  };
  for (const auto& [name, mib] : kKnown) {
    if (name == model) return mib;
  }
  return 0;
}

// One row of a node list, in the trace's own terms.
struct ListedNode {
  std::string name;
  std::string model;
  int gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

Result<Cluster> BuildListCluster(std::string name, const std::vector<ListedNode>& listed,
                                 const ClusterLoadOptions& options, std::string_view origin) {
  if (options.nodes_per_leaf < 1 || options.leaves_per_spine < 1) {
    return InvalidArgument("nodes_per_leaf and leaves_per_spine must be at least 1");
  }
  Cluster cluster;
  cluster.name = std::move(name);
  cluster.partitions.push_back(config::ImpliedPartition());
  for (const ListedNode& l : listed) {
    catalog::NodeProfile spec;
    spec.gpu_model = l.model;
    spec.gpus = l.gpus;
    spec.gpu_memory_mib = KnownGpuMemoryMib(l.model);
    spec.nvlink_island_size = 0;  // the lists say nothing of links: one island
    spec.numa_nodes = 1;
    spec.cpu_milli = l.cpu_milli;
    spec.memory_mib = l.memory_mib;
    Node node = catalog::MakeNode(spec, l.name);
    node.id = NodeId(static_cast<uint32_t>(cluster.nodes.size() + 1));
    node.partitions = {"default"};
    cluster.nodes.push_back(std::move(node));
  }
  config::PlaceInOrder(cluster.nodes, std::vector<bool>(cluster.nodes.size(), false),
                       {options.nodes_per_leaf, options.leaves_per_spine});
  Status valid = cluster.Validate();
  if (!valid.ok()) return InvalidArgument(fmt::format("{}: {}", origin, valid.message()));
  return cluster;
}

using RowReader = Status (*)(const std::vector<std::string_view>& fields, ListedNode& node);

// Reads the rows of a node list whose header is exactly `header`, handing the
// fields of each row to `read_row`.
Result<std::vector<ListedNode>> ReadList(const TextFile& file, std::string_view header,
                                         RowReader read_row) {
  LineCursor cursor(file);
  cursor.Next();  // the header, checked by the caller
  size_t columns = Split(header, ',').size();
  std::vector<ListedNode> out;
  while (cursor.Next()) {
    std::vector<std::string_view> f = cursor.Fields(',');
    if (f.size() != columns) {
      return cursor.Error(
          fmt::format("expected {} columns ({}), found {}", columns, header, f.size()));
    }
    ListedNode node;
    Status s = read_row(f, node);
    if (!s.ok()) return cursor.Error(s.message());
    if (node.name.empty()) return cursor.Error("the node has no name");
    if (node.gpus < 0 || node.gpus > kMaxGpusPerNode) {
      return cursor.Error(
          fmt::format("{} GPUs is out of range [0, {}]", node.gpus, kMaxGpusPerNode));
    }
    if (node.cpu_milli < 0 || node.memory_mib < 0) return cursor.Error("negative CPUs or memory");
    out.push_back(std::move(node));
  }
  return out;
}

Result<int64_t> Number(std::string_view field, std::string_view column) {
  auto v = ParseInt(field);
  if (!v.ok()) return InvalidArgument(fmt::format("{}: '{}' is not an integer", column, field));
  if (*v < 0) return InvalidArgument(fmt::format("{}: {} is negative", column, *v));
  return *v;
}

constexpr std::string_view kOpenbHeader = "sn,cpu_milli,memory_mib,gpu,model";
constexpr std::string_view kPaiHeader = "machine,gpu_type,cap_cpu,cap_mem,cap_gpu";
constexpr std::string_view kSpotHeader = "gpu_model,gpu_capacity_num,cpu_num,node_name";

Status ReadOpenbRow(const std::vector<std::string_view>& f, ListedNode& n) {
  n.name = std::string(f[0]);
  SHOAL_ASSIGN_OR_RETURN(n.cpu_milli, Number(f[1], "cpu_milli"));
  SHOAL_ASSIGN_OR_RETURN(n.memory_mib, Number(f[2], "memory_mib"));
  SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Number(f[3], "gpu"));
  n.gpus = static_cast<int>(std::min<int64_t>(gpus, kMaxGpusPerNode + 1));
  n.model = std::string(f[4]);
  if (n.gpus > 0 && n.model.empty()) return InvalidArgument("a node with GPUs has no model");
  return Status::Ok();
}

Status ReadPaiRow(const std::vector<std::string_view>& f, ListedNode& n) {
  n.name = std::string(f[0]);
  SHOAL_ASSIGN_OR_RETURN(int64_t cores, Number(f[2], "cap_cpu"));
  SHOAL_ASSIGN_OR_RETURN(int64_t mem_gb, Number(f[3], "cap_mem"));
  SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Number(f[4], "cap_gpu"));
  n.cpu_milli = cores * 1000;
  n.memory_mib = mem_gb * 1024;  // the spec's GB are taken as GiB
  n.gpus = static_cast<int>(std::min<int64_t>(gpus, kMaxGpusPerNode + 1));
  // "CPU" marks the CPU-only machines, which have no GPU model.
  if (f[1] != "CPU") n.model = std::string(f[1]);
  if (n.gpus > 0 && n.model.empty()) return InvalidArgument("a machine with GPUs has gpu_type CPU");
  return Status::Ok();
}

Status ReadSpotRow(const std::vector<std::string_view>& f, ListedNode& n) {
  n.model = std::string(f[0]);
  SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Number(f[1], "gpu_capacity_num"));
  SHOAL_ASSIGN_OR_RETURN(int64_t cpus, Number(f[2], "cpu_num"));
  n.gpus = static_cast<int>(std::min<int64_t>(gpus, kMaxGpusPerNode + 1));
  n.cpu_milli = cpus * 1000;
  n.memory_mib = 0;  // the list has no memory column
  // Spot nodes are numbered "0", "1", ...: a prefix keeps names readable.
  n.name = f[3].empty() ? "" : "spot-" + std::string(f[3]);
  return Status::Ok();
}

Result<Cluster> LoadNodeList(const TextFile& file, std::string_view header, RowReader read_row,
                             const ClusterLoadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<ListedNode> nodes, ReadList(file, header, read_row));
  return BuildListCluster(FileStem(file.path()), nodes, options, file.path());
}

// Gavel's cluster spec: {"philly": ["500:0:0"]}, GPU counts of V100:P100:K80.
Result<Cluster> LoadGavelSpec(const TextFile& file, const ClusterLoadOptions& options) {
  const std::string& path = file.path();
  std::string trace_name;
  std::string spec;
  try {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(file.text());
    if (!doc.is_object() || doc.size() != 1) {
      return InvalidArgument(fmt::format(
          "{}: a Gavel cluster spec is an object with one entry, "
          "{{\"name\": [\"v100:p100:k80\"]}}; this file has {}",
          path,
          doc.is_object() ? std::to_string(doc.size()) + " entries" : std::string("no object")));
    }
    auto it = doc.begin();
    trace_name = it.key();
    const nlohmann::ordered_json& specs = it.value();
    if (!specs.is_array() || specs.size() != 1 || !specs[0].is_string()) {
      return InvalidArgument(fmt::format(
          "{}: \"{}\" must list exactly one spec such as \"300:300:300\"", path, trace_name));
    }
    spec = specs[0].get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }

  std::vector<std::string_view> counts = Split(spec, ':');
  if (counts.size() != 3) {
    return InvalidArgument(fmt::format("{}: '{}' is not a V100:P100:K80 GPU count", path, spec));
  }
  static constexpr std::string_view kModels[] = {"V100", "P100", "K80"};
  std::vector<std::pair<std::string, int64_t>> mix;
  for (size_t m = 0; m < 3; ++m) {
    auto count = ParseInt(counts[m]);
    if (!count.ok() || *count < 0 || *count > 10'000'000) {
      return InvalidArgument(fmt::format("{}: '{}' is not a V100:P100:K80 GPU count", path, spec));
    }
    mix.emplace_back(kModels[m], *count);
  }
  return ModelMixCluster(trace_name, mix, options);
}

}  // namespace

Result<Cluster> ModelMixCluster(const std::string& name,
                                const std::vector<std::pair<std::string, int64_t>>& gpus_by_model,
                                const ClusterLoadOptions& options) {
  if (options.gavel_gpus_per_node < 1 || options.gavel_gpus_per_node > kMaxGpusPerNode) {
    return InvalidArgument(fmt::format("gavel_gpus_per_node must be in [1, {}]", kMaxGpusPerNode));
  }
  // Gavel's simulator gives jobs GPUs only; the host figures are the per-GPU
  // share of an AWS p3.16xlarge (64 vCPUs, 488 GiB for 8 GPUs) so that nodes
  // are not empty of CPUs and memory.
  constexpr int64_t kCpuMilliPerGpu = 8000;
  constexpr int64_t kMemoryMibPerGpu = int64_t{61} * 1024;
  std::vector<ListedNode> nodes;
  for (const auto& [model, count] : gpus_by_model) {
    if (count < 0 || count > 10'000'000)
      return InvalidArgument(fmt::format("{} {} GPUs: out of range", count, model));
    int64_t left = count;
    int64_t total_nodes = (left + options.gavel_gpus_per_node - 1) / options.gavel_gpus_per_node;
    int width = std::max<int>(3, static_cast<int>(std::to_string(total_nodes).size()));
    for (int64_t i = 1; left > 0; ++i) {
      ListedNode n;
      n.gpus = static_cast<int>(std::min<int64_t>(left, options.gavel_gpus_per_node));
      left -= n.gpus;
      n.model = model;
      n.name = fmt::format("{}-{:0{}}", ToLower(model), i, width);
      n.cpu_milli = kCpuMilliPerGpu * n.gpus;
      n.memory_mib = kMemoryMibPerGpu * n.gpus;
      nodes.push_back(std::move(n));
    }
  }
  return BuildListCluster(name, nodes, options, name);
}

Result<Cluster> LoadCluster(const std::string& path, const ClusterLoadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(TextFile file, TextFile::Read(path));
  std::string ext = FileExtension(path);
  if (ext == "toml") return config::ParseClusterToml(file.text(), path);
  if (ext == "json") return LoadGavelSpec(file, options);
  std::string_view header = Trim(file.FirstLine());
  if (header == kOpenbHeader) return LoadNodeList(file, header, ReadOpenbRow, options);
  if (header == kPaiHeader) return LoadNodeList(file, header, ReadPaiRow, options);
  if (header == kSpotHeader) return LoadNodeList(file, header, ReadSpotRow, options);
  if (header.empty()) return InvalidArgument(fmt::format("{}: the file is empty", path));
  return InvalidArgument(
      fmt::format("{}:1: unknown cluster file (expected a .toml cluster file, a .json Gavel "
                  "cluster spec, or a node list "
                  "with header '{}', '{}' or '{}'), found '{}'",
                  path, kOpenbHeader, kPaiHeader, kSpotHeader, header.substr(0, 80)));
}

}  // namespace shoal::trace
