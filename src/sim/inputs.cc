#include "sim/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "catalog/mig.h"
#include "core/strings.h"

namespace shoal::sim {

JobSpec SpecFor(const trace::TraceJob& t) {
  JobSpec s;
  s.name = t.name;
  s.account = t.account;
  s.gpu_milli = t.gpu_milli;
  s.gpu_models = t.gpu_models;
  s.cpu_milli_per_node = t.cpu_milli;
  s.mem_mib_per_node = t.mem_mib;
  if (t.gpus_per_node > 0) {
    s.nodes = std::max(1, t.nodes);
    s.gpus_per_node = t.gpus_per_node;
  } else if (t.gpus > 0) {
    s.gpus = t.gpus;
  } else {
    s.nodes = std::max(1, t.nodes);
    if (s.cpu_milli_per_node == 0) s.cpu_milli_per_node = 1000;
  }
  return s;
}

Duration TimeLimitFor(const trace::TraceJob& t, const LimitModel& m) {
  double worst_s = std::max(1.0, ToSeconds(t.duration));
  for (const auto& [model, d] : t.duration_by_model)
    worst_s = std::max(worst_s, ToSeconds(d));
  const auto ceil_minute = [](double s) { return std::max(60.0, std::ceil(s / 60.0) * 60.0); };
  switch (m.kind) {
    case LimitModel::kExact:
      return DurationFromSeconds(ceil_minute(worst_s));
    case LimitModel::kFactor:
      return DurationFromSeconds(ceil_minute(worst_s * m.factor));
    case LimitModel::kPartitionDefault:
      break;
  }
  return Duration(0);
}

Result<LimitModel> ParseLimitModel(std::string_view text) {
  const std::string s = ToLower(Trim(text));
  LimitModel m;
  if (s == "exact") {
    m.kind = LimitModel::kExact;
    return m;
  }
  if (s == "default" || s == "partition") {
    m.kind = LimitModel::kPartitionDefault;
    return m;
  }
  std::string_view num = s;
  if (!num.empty() && (num[0] == 'x' || num[0] == '*')) num.remove_prefix(1);
  auto f = ParseDouble(num);
  if (!f.ok() || *f < 1.0) {
    return InvalidArgument(fmt::format(
        "time-limit estimate '{}': use exact, default, or a factor >= 1 like x2", text));
  }
  m.kind = LimitModel::kFactor;
  m.factor = *f;
  return m;
}

std::string FormatLimitModel(const LimitModel& m) {
  switch (m.kind) {
    case LimitModel::kExact:
      return "exact";
    case LimitModel::kPartitionDefault:
      return "default";
    case LimitModel::kFactor:
      return fmt::format("x{:g}", m.factor);
  }
  return "?";
}

Result<trace::Trace> LoadTraceInput(const std::string& path, const trace::TraceOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return trace::LoadTrace(path, options);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".csv" || ext == ".trace")) files.push_back(e.path());
  }
  if (ec) return InvalidArgument(fmt::format("{}: {}", path, ec.message()));
  std::sort(files.begin(), files.end());
  if (files.empty()) return InvalidArgument(fmt::format("{}: no .csv or .trace files", path));
  trace::Trace merged;
  merged.path = path;
  trace::TraceOptions per_file = options;
  per_file.max_jobs = 0;
  for (const auto& f : files) {
    SHOAL_ASSIGN_OR_RETURN(trace::Trace t, trace::LoadTrace(f.string(), per_file));
    if (merged.format.empty()) {
      merged.format = t.format;
      merged.notes = t.notes;
      merged.cluster = t.cluster;
    } else if (merged.format != t.format) {
      return InvalidArgument(
          fmt::format("{}: mixes {} and {} traces", path, merged.format, t.format));
    }
    const std::string account = f.stem().string();
    for (trace::TraceJob& j : t.jobs) {
      j.account = account;
      j.name = account + "/" + j.name;
      merged.jobs.push_back(std::move(j));
    }
  }
  std::stable_sort(
      merged.jobs.begin(), merged.jobs.end(),
      [](const trace::TraceJob& a, const trace::TraceJob& b) { return a.submit < b.submit; });
  if (options.max_jobs > 0 && merged.jobs.size() > static_cast<size_t>(options.max_jobs)) {
    merged.jobs.resize(static_cast<size_t>(options.max_jobs));
  }
  merged.notes.push_back(
      fmt::format("{} trace files merged; each file is an account", files.size()));
  return merged;
}

namespace {

// A slice model of the cluster and its compute share of its GPU.
struct SliceModel {
  std::string model;
  double compute = 0;
};

std::vector<SliceModel> SliceModels(const Cluster& cluster) {
  std::vector<SliceModel> out;
  for (const Node& n : cluster.nodes) {
    for (const Gpu& g : n.gpus) {
      if (!g.IsMigSlice() || std::any_of(out.begin(), out.end(), [&g](const SliceModel& s) {
            return s.model == g.model;
          })) {
        continue;
      }
      for (const catalog::MigProfile& p : catalog::MigProfilesOf(catalog::BaseModel(g.model))) {
        if (p.name == g.mig_profile)
          out.push_back(
              {g.model, static_cast<double>(p.compute_slices) / catalog::kMigComputeSlices});
      }
    }
  }
  // Smallest first; of equal compute, the one with less memory comes first
  // in the catalogue (1g.10gb before 1g.20gb).
  std::stable_sort(out.begin(), out.end(),
                   [](const SliceModel& a, const SliceModel& b) { return a.compute < b.compute; });
  return out;
}

}  // namespace

Status MapSharesToMigSlices(trace::Trace& trace, const Cluster& cluster) {
  const std::vector<SliceModel> slices = SliceModels(cluster);
  if (slices.empty()) {
    return InvalidArgument(
        "--mig-shares: the cluster has no MIG slices (a cluster file's node group takes mig = "
        "\"7x1g.10gb\")");
  }
  std::map<std::string, int> placed;
  int whole = 0;
  for (trace::TraceJob& j : trace.jobs) {
    const int gpus = j.gpus > 0 ? j.gpus : std::max(j.nodes, 1) * j.gpus_per_node;
    if (j.gpu_milli >= kMilliPerGpu || gpus != 1) continue;
    const double share = static_cast<double>(j.gpu_milli) / kMilliPerGpu;
    j.gpu_milli = kMilliPerGpu;
    auto fit = std::find_if(slices.begin(), slices.end(), [&](const SliceModel& s) {
      return s.compute + 1e-9 >= share &&
             (j.gpu_models.empty() ||
              std::any_of(j.gpu_models.begin(), j.gpu_models.end(), [&](const std::string& m) {
                return GpuModelMatches(m, catalog::BaseModel(s.model));
              }));
    });
    if (fit == slices.end()) {
      ++whole;
      continue;
    }
    j.gpu_models = {fit->model};
    placed[fit->model]++;
  }
  std::string where;
  for (const auto& [model, count] : placed)
    where += fmt::format("{}{} on {}", where.empty() ? "" : ", ", count, model);
  trace.notes.push_back(fmt::format(
      "--mig-shares: jobs asking for a share of one GPU ask for a MIG slice instead: {}; {} on "
      "whole GPUs (no slice covers their share); nothing is time-shared",
      where.empty() ? "none" : where, whole));
  return Status::Ok();
}

}  // namespace shoal::sim
