#include "agent/exporter.h"

#include <algorithm>
#include <map>

#include "agent/protocol.h"
#include "api/prometheus.h"

namespace shoal::agent {

namespace prom = api::prometheus;

GpuHold HoldOf(const StepRequest& step) {
  return {.job = step.job,
          .user = step.user,
          .account = step.job_account,
          .gpus = step.gpus,
          .power_cap_w = step.gpu_power_cap_w};
}

std::string RenderNodeMetrics(const std::string& node, const std::vector<GpuDevice>& devices,
                              const std::vector<GpuSample>& samples,
                              const std::vector<GpuHold>& holds) {
  // The jobs on each GPU in id order, each once: a job's steps share its GPUs.
  std::map<int, std::vector<prom::GpuJob>> jobs;
  for (const GpuHold& h : holds) {
    for (int g : h.gpus)
      jobs[g].push_back({h.job, h.user, h.account});
  }
  for (auto& [gpu, list] : jobs) {
    std::stable_sort(list.begin(), list.end(),
                     [](const prom::GpuJob& a, const prom::GpuJob& b) { return a.id < b.id; });
    list.erase(
        std::unique(list.begin(), list.end(),
                    [](const prom::GpuJob& a, const prom::GpuJob& b) { return a.id == b.id; }),
        list.end());
  }
  std::vector<api::GpuTelemetry> readings;
  readings.reserve(samples.size());  // the lines point into it: no reallocation
  std::vector<prom::DcgmLine> lines;
  lines.reserve(samples.size());
  for (const GpuSample& s : samples) {
    auto d = std::find_if(devices.begin(), devices.end(),
                          [&s](const GpuDevice& dev) { return dev.index == s.index; });
    if (d == devices.end()) continue;
    readings.push_back(TelemetryOf(s));
    auto held = jobs.find(s.index);
    lines.push_back(
        {prom::DcgmLabels({.index = d->device,
                           .uuid = d->uuid,
                           .pci_bus_id = d->pci_bus_id,
                           .model = d->model,
                           .hostname = node,
                           .driver_version = d->driver_version,
                           .mig_profile = d->mig_profile,
                           .mig_gi = d->mig_gi,
                           .jobs = held != jobs.end() ? std::span<const prom::GpuJob>(held->second)
                                                      : std::span<const prom::GpuJob>()}),
         &readings.back(), &s.counters});
  }
  prom::Buffer out;
  prom::AppendDcgmFields(out, lines);
  return fmt::to_string(out);
}

}  // namespace shoal::agent
