#include "sim/faults.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/strings.h"

namespace shoal::sim {

namespace {

constexpr double kSecondsPerDay = 86400;

// "1%/day", "0.5/day", "2/week", "0.01/h", "3" (per day): a rate per day.
Result<double> ParseRate(std::string_view key, std::string_view text) {
  std::string_view num = text;
  double per_days = 1;
  if (const size_t slash = num.find('/'); slash != std::string_view::npos) {
    const std::string unit = ToLower(Trim(num.substr(slash + 1)));
    num = num.substr(0, slash);
    if (unit == "h" || unit == "hour") {
      per_days = 1.0 / 24;
    } else if (unit == "d" || unit == "day") {
      per_days = 1;
    } else if (unit == "w" || unit == "week") {
      per_days = 7;
    } else {
      return InvalidArgument(
          fmt::format("--faults {}: unknown unit '/{}' (use /h, /day or /week)", key, unit));
    }
  }
  num = Trim(num);
  double scale = 1;
  if (!num.empty() && num.back() == '%') {
    num.remove_suffix(1);
    scale = 0.01;
  }
  auto v = ParseDouble(Trim(num));
  if (!v.ok() || !std::isfinite(*v) || *v < 0) {
    return InvalidArgument(fmt::format(
        "--faults {}={}: a rate is a count or a percentage per unit and time, like 1%/day", key,
        text));
  }
  return *v * scale / per_days;
}

Result<Duration> ParseLength(std::string_view key, std::string_view text, bool zero_ok) {
  auto d = ParseDuration(Trim(text));
  if (!d.ok() || d->count() < 0 || (!zero_ok && d->count() == 0)) {
    return InvalidArgument(fmt::format("--faults {}={}: expected a {}duration like 90s or 4h", key,
                                       text, zero_ok ? "" : "positive "));
  }
  return *d;
}

struct RateKey {
  const char* key;
  double FaultModel::*rate;
};
constexpr RateKey kRates[] = {{"node-fail", &FaultModel::node_fail_per_day},
                              {"heartbeat-loss", &FaultModel::heartbeat_loss_per_day},
                              {"gpu-xid", &FaultModel::gpu_xid_per_day},
                              {"gpu-slow", &FaultModel::gpu_slow_per_day},
                              {"controller-restart", &FaultModel::controller_restart_per_day}};

struct LengthKey {
  const char* key;
  Duration FaultModel::*length;
  bool zero_ok;
};
constexpr LengthKey kLengths[] = {{"node-repair", &FaultModel::node_repair, false},
                                  {"heartbeat-gap", &FaultModel::heartbeat_gap, false},
                                  {"gpu-repair", &FaultModel::gpu_repair, false},
                                  {"slow-for", &FaultModel::slow_for, false},
                                  {"controller-down", &FaultModel::controller_down, false},
                                  {"checkpoint", &FaultModel::checkpoint_every, true},
                                  {"node-timeout", &FaultModel::node_timeout, false},
                                  {"kill-grace", &FaultModel::kill_grace, true},
                                  {"fence-margin", &FaultModel::fence_margin, true}};

std::vector<std::string_view> KeyNames() {
  std::vector<std::string_view> names;
  for (const RateKey& k : kRates)
    names.push_back(k.key);
  for (const LengthKey& k : kLengths)
    names.push_back(k.key);
  names.push_back("slow-factor");
  return names;
}

Status SetKey(FaultModel& m, std::string_view key, std::string_view value) {
  for (const RateKey& k : kRates) {
    if (key != k.key) continue;
    SHOAL_ASSIGN_OR_RETURN(m.*k.rate, ParseRate(key, value));
    return Status::Ok();
  }
  for (const LengthKey& k : kLengths) {
    if (key != k.key) continue;
    SHOAL_ASSIGN_OR_RETURN(m.*k.length, ParseLength(key, value, k.zero_ok));
    return Status::Ok();
  }
  if (key == "slow-factor") {
    auto f = ParseDouble(Trim(value));
    if (!f.ok() || !(*f > 0 && *f < 1)) {
      return InvalidArgument(fmt::format(
          "--faults slow-factor={}: the share of its speed a slow GPU keeps, above 0 and below 1",
          value));
    }
    m.slow_factor = *f;
    return Status::Ok();
  }
  return InvalidArgument(
      fmt::format("--faults: unknown key '{}'{}", key, UnknownNameHint(key, KeyNames())));
}

}  // namespace

Result<FaultModel> ParseFaultModel(std::string_view text) {
  FaultModel m;
  const std::string_view all = Trim(text);
  if (all.empty() || ToLower(all) == "none") return m;
  for (std::string_view part : Split(all, ',')) {
    part = Trim(part);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(
          fmt::format("--faults: '{}' is not key=value (e.g. node-fail=1%/day)", part));
    }
    SHOAL_RETURN_IF_ERROR(SetKey(m, Trim(part.substr(0, eq)), part.substr(eq + 1)));
  }
  if (!m.Any()) {
    return InvalidArgument(
        "--faults: no fault has a rate above zero (node-fail, heartbeat-loss, gpu-xid, gpu-slow "
        "or controller-restart)");
  }
  return m;
}

std::string FormatFaultModel(const FaultModel& m) {
  if (!m.Any()) return "none";
  std::vector<std::string> parts;
  // In the largest unit that divides it, as ParseDuration reads it back.
  auto length = [](Duration d) {
    const int64_t ms = d.count();
    if (ms != 0 && ms % 3'600'000 == 0) return fmt::format("{}h", ms / 3'600'000);
    if (ms != 0 && ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
    if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
    return fmt::format("{}ms", ms);
  };
  auto rate = [&](const char* key, double per_day, const char* len_key, Duration len) {
    if (per_day <= 0) return;
    parts.push_back(fmt::format("{}={}/day", key, per_day));
    parts.push_back(fmt::format("{}={}", len_key, length(len)));
  };
  rate("node-fail", m.node_fail_per_day, "node-repair", m.node_repair);
  rate("heartbeat-loss", m.heartbeat_loss_per_day, "heartbeat-gap", m.heartbeat_gap);
  rate("gpu-xid", m.gpu_xid_per_day, "gpu-repair", m.gpu_repair);
  rate("gpu-slow", m.gpu_slow_per_day, "slow-for", m.slow_for);
  if (m.gpu_slow_per_day > 0) parts.push_back(fmt::format("slow-factor={}", m.slow_factor));
  rate("controller-restart", m.controller_restart_per_day, "controller-down", m.controller_down);
  parts.push_back(fmt::format("checkpoint={}", length(m.checkpoint_every)));
  return Join(parts, ",");
}

std::string_view FaultKindName(Fault::Kind kind) {
  switch (kind) {
    case Fault::Kind::kNodeFail:
      return "node failure";
    case Fault::Kind::kHeartbeatLoss:
      return "lost heartbeats";
    case Fault::Kind::kGpuXid:
      return "GPU failure (XID)";
    case Fault::Kind::kGpuSlow:
      return "slow GPU";
    case Fault::Kind::kControllerRestart:
      return "controller restart";
  }
  return "?";
}

FaultSource::FaultSource(const FaultModel& model, const std::vector<int>& gpus_per_node,
                         uint64_t seed, Time start)
    : rng_(seed ^ 0x6661756c74730001ULL) {
  for (uint32_t n = 0; n < gpus_per_node.size(); ++n) {
    node_first_gpu_.push_back(gpu_owner_.size());
    for (int g = 0; g < gpus_per_node[n]; ++g)
      gpu_owner_.push_back(n);
  }
  const double nodes = static_cast<double>(gpus_per_node.size());
  const double gpus = static_cast<double>(gpu_owner_.size());
  using K = Fault::Kind;
  processes_ = {{K::kNodeFail, model.node_fail_per_day * nodes, model.node_repair},
                {K::kHeartbeatLoss, model.heartbeat_loss_per_day * nodes, model.heartbeat_gap},
                {K::kGpuXid, model.gpu_xid_per_day * gpus, model.gpu_repair},
                {K::kGpuSlow, model.gpu_slow_per_day * gpus, model.slow_for},
                {K::kControllerRestart, model.controller_restart_per_day, model.controller_down}};
  for (Process& p : processes_) {
    p.per_second /= kSecondsPerDay;
    Draw(p, start);
  }
}

FaultSource::FaultSource(std::vector<Fault> scripted)
    : scripted_(std::move(scripted)), is_scripted_(true) {
  std::stable_sort(scripted_.begin(), scripted_.end(),
                   [](const Fault& a, const Fault& b) { return a.at < b.at; });
}

// An exponential draw with mean 1 / rate; a process with no rate never fires.
void FaultSource::Draw(Process& p, Time after) {
  if (p.per_second <= 0) {
    p.next = kTimeNever;
    return;
  }
  const double u = 1.0 - rng_.UniformDouble();  // (0, 1]
  p.next = after + std::max(Duration(1), DurationFromSeconds(-std::log(u) / p.per_second));
}

FaultSource::Process* FaultSource::Earliest() {
  return const_cast<Process*>(std::as_const(*this).Earliest());
}

const FaultSource::Process* FaultSource::Earliest() const {
  const Process* best = nullptr;
  for (const Process& p : processes_) {
    if (best == nullptr || p.next < best->next) best = &p;
  }
  return best;
}

Time FaultSource::NextAt() const {
  if (is_scripted_)
    return next_scripted_ < scripted_.size() ? scripted_[next_scripted_].at : kTimeNever;
  const Process* p = Earliest();
  return p == nullptr ? kTimeNever : p->next;
}

Fault FaultSource::Pop() {
  if (is_scripted_) return scripted_.at(next_scripted_++);
  Process& p = *Earliest();
  Fault f;
  f.at = p.next;
  f.kind = p.kind;
  switch (p.kind) {
    case Fault::Kind::kNodeFail:
    case Fault::Kind::kHeartbeatLoss:
      f.node = static_cast<uint32_t>(rng_.Uniform(node_first_gpu_.size()));
      break;
    case Fault::Kind::kGpuXid:
    case Fault::Kind::kGpuSlow: {
      const uint64_t pick = rng_.Uniform(gpu_owner_.size());
      f.node = gpu_owner_[pick];
      f.gpu = static_cast<int>(pick - node_first_gpu_[f.node]);
      break;
    }
    case Fault::Kind::kControllerRestart:
      break;
  }
  const double u = 1.0 - rng_.UniformDouble();
  f.lasts = std::max(Duration(1), DurationFromSeconds(-std::log(u) * ToSeconds(p.mean_length)));
  Draw(p, f.at);
  return f;
}

FaultState::FaultState(const FaultModel& model, const sched::Inventory& inv)
    : model_(model), inv_(inv), nodes_(inv.size()), statuses_(inv.size()) {}

bool FaultState::Begin(const Fault& f, Time now) {
  using K = Fault::Kind;
  if (f.kind == K::kControllerRestart) {
    if (now < controller_up_) {
      ++stats_.ignored;
      return false;
    }
    ++stats_.controller_restarts;
    controller_up_ = now + f.lasts;
    return true;
  }
  Node& n = nodes_.at(f.node);
  const uint64_t bit = uint64_t{1} << f.gpu;
  const bool gpu_fault = f.kind == K::kGpuXid || f.kind == K::kGpuSlow;
  if (n.out != Node::Out::kNo || (gpu_fault && (f.gpu >= inv_.node(f.node).gpu_count ||
                                                ((n.failed_gpus | n.slow_gpus) & bit)))) {
    ++stats_.ignored;
    return false;
  }
  switch (f.kind) {
    case K::kNodeFail:
      ++stats_.node_failures;
      n.out = Node::Out::kCrashed;
      break;
    case K::kHeartbeatLoss:
      ++stats_.heartbeat_losses;
      if (f.lasts <= model_.node_timeout) return false;  // heard again in time
      ++stats_.heartbeat_losses_down;
      n.out = Node::Out::kSilent;
      break;
    case K::kGpuXid:
      ++stats_.gpu_failures;
      n.failed_gpus |= bit;
      failed_since_.emplace_back(uint64_t{f.node} << 8 | static_cast<uint64_t>(f.gpu), now);
      Refresh(f.node);
      return true;
    case K::kGpuSlow:
      ++stats_.slow_gpus;
      n.slow_gpus |= bit;
      return true;
    case K::kControllerRestart:
      break;
  }
  n.since = now;
  return true;
}

void FaultState::Detected(sched::NodeIndex n) {
  nodes_[n].detected = true;
  Refresh(n);
}

void FaultState::Back(sched::NodeIndex n, Time now) {
  Node& node = nodes_[n];
  if (node.out == Node::Out::kNo) return;
  // Its failed GPUs count as out of service until repaired, not twice.
  stats_.out_of_service_gpu_s +=
      ToSeconds(now - node.since) * (inv_.node(n).gpu_count - std::popcount(node.failed_gpus));
  node.out = Node::Out::kNo;
  node.detected = false;
  Refresh(n);
}

void FaultState::Repaired(sched::NodeIndex n, int gpu, Time now) {
  const uint64_t key = uint64_t{n} << 8 | static_cast<uint64_t>(gpu);
  auto it = std::find_if(failed_since_.begin(), failed_since_.end(),
                         [&](const auto& e) { return e.first == key; });
  if (it == failed_since_.end()) return;
  stats_.out_of_service_gpu_s += ToSeconds(now - it->second);
  failed_since_.erase(it);
  nodes_[n].failed_gpus &= ~(uint64_t{1} << gpu);
  Refresh(n);
}

void FaultState::Fast(sched::NodeIndex n, int gpu) {
  nodes_[n].slow_gpus &= ~(uint64_t{1} << gpu);
}

void FaultState::End(Time now) {
  for (sched::NodeIndex n = 0; n < nodes_.size(); ++n)
    Back(n, now);
  while (!failed_since_.empty()) {
    const auto [key, since] = failed_since_.back();
    Repaired(static_cast<sched::NodeIndex>(key >> 8), static_cast<int>(key & 0xff), now);
  }
}

// What the controller knows: down once it noticed, draining while a GPU is
// failed (a sick GPU drains its node until an admin resumes it).
void FaultState::Refresh(sched::NodeIndex n) {
  const Node& node = nodes_[n];
  sched::NodeStatus& st = statuses_[n];
  statuses_changed_ = true;
  st.unhealthy_gpus = node.failed_gpus;
  st.state = node.detected      ? NodeState::kDown
             : node.failed_gpus ? NodeState::kDraining
                                : NodeState::kUp;
}

}  // namespace shoal::sim
