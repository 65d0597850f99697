#include "server/speeds.h"

#include "catalog/gpus.h"
#include "sched/speed.h"

namespace shoal::server {

std::shared_ptr<const std::vector<double>> ModelSpeeds(const JobSpec& spec,
                                                       const sched::Inventory& inv) {
  const std::vector<std::string>& models = inv.models();
  if (models.size() < 2) return nullptr;
  if (!spec.gpu_speeds.empty()) return sched::SpeedsByName(models, spec.gpu_speeds);
  auto speed = std::make_shared<std::vector<double>>(models.size(), 0.0);
  for (size_t m = 0; m < models.size(); ++m) {
    const catalog::GpuSpec* g = catalog::FindGpu(models[m]);
    if (g == nullptr || g->PeakTflops(catalog::Precision::kBf16) <= 0) return nullptr;
    (*speed)[m] = g->PeakTflops(catalog::Precision::kBf16);
  }
  return speed;
}

}  // namespace shoal::server
