#include "sim/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace shoal::sim {

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

}  // namespace shoal::sim
