#include "server/speeds.h"

#include <fmt/format.h>

#include "catalog/gpus.h"
#include "sched/speed.h"

namespace shoal::server {

namespace {

double PeakOf(const std::string& model) {
  const catalog::GpuSpec* g = catalog::FindGpu(model);
  return g != nullptr ? g->PeakTflops(catalog::Precision::kBf16) : 0.0;
}

}  // namespace

void LearnedSpeeds::Load(const std::vector<state::LearnedSpeed>& stored) {
  table_.clear();
  for (const state::LearnedSpeed& s : stored)
    table_[{s.user, s.name, s.model}] = s;
  ++version_;
}

std::optional<state::LearnedSpeed> LearnedSpeeds::Learn(const std::string& user,
                                                        const std::string& name,
                                                        const std::string& model,
                                                        const JobEfficiency& efficiency, Time now) {
  if (efficiency.progress_samples < kMinSamples || !(efficiency.progress_rate > 0) ||
      user.empty() || name.empty() || model.empty()) {
    return std::nullopt;
  }
  if (!IsOf(FirstOf(user, name), user, name) && NamesOf(user) >= kMaxNamesPerUser)
    return std::nullopt;
  auto [it, added] = table_.try_emplace({user, name, model});
  state::LearnedSpeed& s = it->second;
  if (added) {
    s = {.user = user,
         .name = name,
         .model = model,
         .rate = efficiency.progress_rate,
         .runs = 0,
         .updated = now};
  } else {
    s.rate = 0.5 * s.rate + 0.5 * efficiency.progress_rate;
  }
  s.runs += 1;
  s.updated = now;
  ++version_;
  return s;
}

std::map<std::string, const state::LearnedSpeed*> LearnedSpeeds::Of(const std::string& user,
                                                                    const std::string& name) const {
  std::map<std::string, const state::LearnedSpeed*> out;
  for (auto it = FirstOf(user, name); IsOf(it, user, name); ++it)
    out[std::get<2>(it->first)] = &it->second;
  return out;
}

int LearnedSpeeds::Forget(const std::string& user, const std::string& name) {
  auto first = FirstOf(user, name), last = first;
  int forgotten = 0;
  for (; IsOf(last, user, name); ++last)
    ++forgotten;
  if (forgotten > 0) {
    table_.erase(first, last);
    ++version_;
  }
  return forgotten;
}

size_t LearnedSpeeds::NamesOf(const std::string& user) const {
  size_t names = 0;
  const std::string* last = nullptr;
  for (auto it = table_.lower_bound({user, "", ""});
       it != table_.end() && std::get<0>(it->first) == user; ++it) {
    if (last == nullptr || *last != std::get<1>(it->first)) ++names;
    last = &std::get<1>(it->first);
  }
  return names;
}

std::vector<const state::LearnedSpeed*> LearnedSpeeds::List(const std::string& user) const {
  std::vector<const state::LearnedSpeed*> out;
  auto it = user.empty() ? table_.begin() : table_.lower_bound({user, "", ""});
  for (; it != table_.end() && (user.empty() || std::get<0>(it->first) == user); ++it)
    out.push_back(&it->second);
  return out;
}

ModelSpeeds SpeedsOf(const JobSpec& spec, const sched::Inventory& inv,
                     const LearnedSpeeds* learned) {
  const std::vector<std::string>& models = inv.models();
  if (models.size() < 2) return {};
  if (!spec.gpu_speeds.empty()) return {sched::SpeedsByName(models, spec.gpu_speeds), "declared"};
  auto speed = std::make_shared<std::vector<double>>(models.size(), 0.0);
  if (learned != nullptr) {
    const auto rates = learned->Of(spec.user, spec.name);
    int runs = 0, seen = 0;
    double sum = 0, ratio_sum = 0;  // per model seen: its rate over its catalogue peak
    int ratios = 0;
    for (size_t m = 0; m < models.size(); ++m) {
      auto r = rates.find(models[m]);
      if (r == rates.end()) continue;
      (*speed)[m] = r->second->rate;
      runs += r->second->runs;
      sum += r->second->rate;
      ++seen;
      if (const double peak = PeakOf(models[m]); peak > 0) {
        ratio_sum += r->second->rate / peak;
        ++ratios;
      }
    }
    if (seen > 0) {
      for (size_t m = 0; m < models.size(); ++m) {
        if ((*speed)[m] > 0) continue;
        const double peak = PeakOf(models[m]);
        (*speed)[m] = ratios > 0 && peak > 0 ? peak * ratio_sum / ratios : sum / seen;
      }
      return {speed, fmt::format("learned from {} run{}", runs, runs == 1 ? "" : "s")};
    }
  }
  for (size_t m = 0; m < models.size(); ++m) {
    (*speed)[m] = PeakOf(models[m]);
    if ((*speed)[m] <= 0) return {};
  }
  return {speed, "catalogue (peak BF16)"};
}

}  // namespace shoal::server
