#include "server/speeds.h"

#include "catalog/gpus.h"
#include "core/cluster.h"

namespace shoal::server {

std::shared_ptr<const std::vector<double>> ModelSpeeds(const JobSpec& spec,
                                                       const sched::Inventory& inv) {
  const std::vector<std::string>& models = inv.models();
  if (models.size() < 2) return nullptr;
  auto speed = std::make_shared<std::vector<double>>(models.size(), 0.0);
  if (!spec.gpu_speeds.empty()) {
    for (size_t m = 0; m < models.size(); ++m) {
      for (const auto& [name, s] : spec.gpu_speeds) {
        if (GpuModelMatches(name, models[m])) {
          (*speed)[m] = s;
          break;
        }
      }
    }
    return speed;
  }
  for (size_t m = 0; m < models.size(); ++m) {
    const catalog::GpuSpec* g = catalog::FindGpu(models[m]);
    if (g == nullptr || g->PeakTflops(catalog::Precision::kBf16) <= 0) return nullptr;
    (*speed)[m] = g->PeakTflops(catalog::Precision::kBf16);
  }
  return speed;
}

}  // namespace shoal::server
