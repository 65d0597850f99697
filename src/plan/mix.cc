#include "plan/mix.h"

#include <fmt/format.h>

#include <functional>

namespace shoal::plan {

int64_t Mix::TotalGpus() const {
  int64_t total = 0;
  for (int64_t g : gpus)
    total += g;
  return total;
}

std::string Mix::Describe(const std::vector<MixModel>& models) const {
  std::string out;
  for (size_t m = 0; m < gpus.size() && m < models.size(); ++m)
    out += fmt::format("{}{} {}", m == 0 ? "" : ", ", models[m].model, gpus[m]);
  return out;
}

Result<std::vector<Mix>> EnumerateMixes(const std::vector<MixModel>& models,
                                        const MixLimits& limits) {
  if (models.empty()) return InvalidArgument("no GPU models to mix");
  if (limits.step < 1) return InvalidArgument("the step must be at least one GPU");
  const bool by_total = limits.total_gpus > 0;
  const bool by_budget = limits.budget > 0;
  if (by_total == by_budget)
    return InvalidArgument("give either a number of GPUs or a budget, not both nor neither");
  if (by_total && limits.total_gpus % limits.step != 0) {
    return InvalidArgument(
        fmt::format("{} GPUs is not a multiple of the step ({})", limits.total_gpus, limits.step));
  }
  for (const MixModel& m : models) {
    if (by_budget && !(m.price > 0))
      return InvalidArgument(
          fmt::format("a budget needs a price for every model; {} has none", m.model));
  }
  std::vector<Mix> out;
  Mix mix;
  mix.gpus.assign(models.size(), 0);
  // Tries each count for model m, given the counts before it.
  std::function<Status(size_t, int64_t, double)> place = [&](size_t m, int64_t gpus,
                                                             double cost) -> Status {
    if (m == models.size()) {
      if (gpus == 0) return Status::Ok();
      if (by_total && gpus != limits.total_gpus) return Status::Ok();
      if (by_budget) {
        for (const MixModel& model : models) {
          if (cost + model.price * static_cast<double>(limits.step) <= limits.budget)
            return Status::Ok();  // a further step fits: not the most this budget buys
        }
      }
      if (out.size() == limits.max_mixes) {
        return InvalidArgument(
            fmt::format("more than {} mixes to simulate: choose a coarser step", limits.max_mixes));
      }
      mix.cost = cost;
      out.push_back(mix);
      return Status::Ok();
    }
    for (int64_t n = 0;; n += limits.step) {
      const double c = cost + models[m].price * static_cast<double>(n);
      if (by_total && gpus + n > limits.total_gpus) break;
      if (by_budget && c > limits.budget) break;
      mix.gpus[m] = n;
      SHOAL_RETURN_IF_ERROR(place(m + 1, gpus + n, c));
    }
    mix.gpus[m] = 0;
    return Status::Ok();
  };
  SHOAL_RETURN_IF_ERROR(place(0, 0, 0));
  if (out.empty()) return InvalidArgument("no mix of at least one step of GPUs fits");
  return out;
}

}  // namespace shoal::plan
