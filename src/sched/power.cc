#include "sched/power.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <optional>

#include "sched/request.h"

namespace shoal::sched {

namespace {

// What one node's part of an allocation adds to the node's draw.
double AddedOnNode(const Inventory& inv, const InvNode& n, const NodeAllocation& na, double gpu_w) {
  const double share = static_cast<double>(na.gpu_milli) / kMilliPerGpu;
  double added = 0;
  for (uint64_t m = na.gpu_mask; m != 0; m &= m - 1) {
    const auto g = static_cast<size_t>(std::countr_zero(m));
    const double rated = g < n.gpu_rated_w.size() ? n.gpu_rated_w[g] : 0;
    double draw = gpu_w > 0 ? gpu_w : rated;
    if (rated > 0) draw = std::min(draw, rated);
    added += (draw - inv.gpu_idle_fraction() * rated) * share;
  }
  return added;
}

std::string Kw(double w) {
  return fmt::format("{:.1f} kW", w / 1000);
}

}  // namespace

PowerLedger::PowerLedger(const Inventory& inv) : inv_(inv) {
  const auto& budgets = inv.power_budgets();
  load_w_.assign(budgets.size(), 0);
  for (size_t b = 0; b < budgets.size(); ++b) {
    NodeBitset::ForEachAnd(budgets[b].nodes, budgets[b].nodes, [&](uint32_t n) {
      load_w_[b] += inv.node(n).idle_w;
      return true;
    });
  }
}

std::vector<double> PowerLedger::Added(const Allocation& alloc, double gpu_w) const {
  std::vector<double> added(load_w_.size(), 0);
  for (const NodeAllocation& na : alloc.nodes) {
    const std::optional<NodeIndex> n = inv_.IndexOf(na.node);
    if (!n) continue;
    const InvNode& node = inv_.node(*n);
    if (node.power_budgets == 0 || na.gpu_mask == 0) continue;
    const double w = AddedOnNode(inv_, node, na, gpu_w);
    for (uint64_t m = node.power_budgets; m != 0; m &= m - 1)
      added[static_cast<size_t>(std::countr_zero(m))] += w;
  }
  return added;
}

void PowerLedger::Charge(JobId job, const Allocation& alloc, double gpu_w, int sign,
                         Time expected_end) {
  if (!active()) return;
  std::vector<double> added = Added(alloc, gpu_w);
  for (size_t b = 0; b < added.size(); ++b)
    load_w_[b] += sign * added[b];
  if (sign > 0 && expected_end != kTimeNever) {
    releases_.push_back({expected_end, job, std::move(added)});
  } else if (sign < 0) {
    std::erase_if(releases_, [&](const Release& r) { return r.job == job; });
  }
}

int PowerLedger::Crossed(const Allocation& alloc, double gpu_w) const {
  if (!active()) return -1;
  const std::vector<double> added = Added(alloc, gpu_w);
  for (size_t b = 0; b < added.size(); ++b) {
    if (added[b] > 0 && load_w_[b] + added[b] > inv_.power_budgets()[b].watts) {
      return static_cast<int>(b);
    }
  }
  return -1;
}

PendingDecision PowerLedger::Wait(JobId job, const Allocation& alloc, double gpu_w,
                                  Time now) const {
  const int budget = Crossed(alloc, gpu_w);
  const auto b = static_cast<size_t>(budget);
  const double added = Added(alloc, gpu_w)[b];
  PendingDecision d;
  d.job = job;
  d.reason = PendingReason::kPowerBudget;
  d.detail = fmt::format("power budget '{}' would reach {} of its {} (it adds {}, {} expected now)",
                         inv_.power_budgets()[b].name, Kw(load_w_[b] + added),
                         Kw(inv_.power_budgets()[b].watts), Kw(added), Kw(load_w_[b]));
  d.estimated_start = WhenFits(budget, alloc, gpu_w, now);
  if (d.estimated_start == kTimeNever)
    d.detail += "; more than the budget allows with its nodes idle";
  return d;
}

Time PowerLedger::WhenFits(int budget, const Allocation& alloc, double gpu_w, Time now) const {
  const auto b = static_cast<size_t>(budget);
  const double cap = inv_.power_budgets()[b].watts;
  double load = load_w_[b] + Added(alloc, gpu_w)[b];
  if (load <= cap) return now;
  std::vector<const Release*> order;
  for (const Release& r : releases_) {
    if (r.added[b] > 0) order.push_back(&r);
  }
  std::sort(order.begin(), order.end(),
            [](const Release* x, const Release* y) { return x->at < y->at; });
  for (const Release* r : order) {
    load -= r->added[b];
    if (load <= cap) return std::max(r->at, now);
  }
  return kTimeNever;
}

void PowerLedger::Reserve(const Allocation& alloc, double gpu_w, Time at) {
  PowerReservation r{at, Added(alloc, gpu_w)};
  for (size_t b = 0; b < r.spare_w.size(); ++b) {
    double load = load_w_[b];
    for (const Release& rel : releases_) {
      if (rel.at <= at) load -= rel.added[b];
    }
    r.spare_w[b] = inv_.power_budgets()[b].watts - load - r.spare_w[b];
  }
  reservation_ = std::move(r);
}

bool PowerLedger::KeepsReservation(const Allocation& alloc, double gpu_w, Time end) {
  if (!reservation_ || end <= reservation_->at) return true;
  const std::vector<double> added = Added(alloc, gpu_w);
  for (size_t b = 0; b < added.size(); ++b) {
    if (added[b] > 0 && added[b] > reservation_->spare_w[b]) return false;
  }
  for (size_t b = 0; b < added.size(); ++b)
    reservation_->spare_w[b] -= std::max(0.0, added[b]);
  return true;
}

NodeBitset PowerLedger::CrossedNodes(const Allocation& alloc, double gpu_w) const {
  NodeBitset out(inv_.size());
  if (!active()) return out;
  const std::vector<double> added = Added(alloc, gpu_w);
  for (size_t b = 0; b < added.size(); ++b) {
    if (added[b] <= 0 || load_w_[b] + added[b] <= inv_.power_budgets()[b].watts) continue;
    const auto& from = inv_.power_budgets()[b].nodes.words();
    for (size_t w = 0; w < from.size(); ++w)
      out.words()[w] |= from[w];
  }
  return out;
}

std::optional<Allocation> PlaceUnderBudgets(
    const PowerLedger& ledger, const Request& req, const Allocation& crossing, double gpu_w,
    const std::function<std::optional<Allocation>(const Request&)>& place) {
  NodeBitset off = ledger.CrossedNodes(crossing, gpu_w);
  const size_t nodes = off.size();
  for (int tries = 0; tries < 3 && off.Count() < nodes; ++tries) {
    Request elsewhere = req;
    auto allowed = std::make_shared<NodeBitset>(nodes);
    for (size_t w = 0; w < allowed->words().size(); ++w) {
      const uint64_t base = req.allowed_nodes ? req.allowed_nodes->words()[w] : ~uint64_t{0};
      allowed->words()[w] = base & ~off.words()[w];
    }
    elsewhere.allowed_nodes = std::move(allowed);
    std::optional<Allocation> again = place(elsewhere);
    if (!again) return std::nullopt;
    if (ledger.Crossed(*again, gpu_w) < 0) return again;
    const NodeBitset more = ledger.CrossedNodes(*again, gpu_w);
    for (size_t w = 0; w < off.words().size(); ++w)
      off.words()[w] |= more.words()[w];
  }
  return std::nullopt;
}

Status CheckPowerFits(const Inventory& inv, const Request& req, double gpu_w) {
  if (inv.power_budgets().empty() || req.total_gpus == 0) return Status::Ok();
  uint64_t covering = ~uint64_t{0};  // budgets over every node it may use
  double least_w = -1;               // the least one of its GPUs adds, anywhere
  for (const InvNode& n : inv.nodes()) {
    const uint64_t gpus = n.GpusOfModels(req.model_mask);
    if (gpus == 0 || !NodeEligible(n, req)) continue;
    covering &= n.power_budgets;
    double w = -1;  // the least one GPU of the node adds
    for (uint64_t g = gpus; g != 0; g &= g - 1) {
      const NodeAllocation one{n.id, g & (~g + 1), req.gpu_milli, 0, 0, false};
      const double added = AddedOnNode(inv, n, one, gpu_w);
      if (w < 0 || added < w) w = added;
    }
    if (least_w < 0 || w < least_w) least_w = w;
  }
  if (least_w <= 0) return Status::Ok();
  PowerLedger idle(inv);
  for (uint64_t m = covering; m != 0; m &= m - 1) {
    const auto b = static_cast<size_t>(std::countr_zero(m));
    if (b >= idle.loads_w().size()) break;
    const double need = req.total_gpus * least_w;
    const InvPowerBudget& budget = inv.power_budgets()[b];
    if (idle.loads_w()[b] + need > budget.watts) {
      return Unsatisfiable(fmt::format(
          "power budget '{}' ({}) cannot hold it even with every node idle: its {} GPUs add at "
          "least {} to the {} idle nodes draw",
          budget.name, Kw(budget.watts), req.total_gpus, Kw(need), Kw(idle.loads_w()[b])));
    }
  }
  return Status::Ok();
}

Result<Time> PowerStart(const Snapshot& snapshot, const Allocation& alloc, double gpu_w,
                        Time from) {
  PowerLedger power(*snapshot.inventory);
  if (!power.active()) return from;
  for (const JobInfo& r : snapshot.running) {
    if (r.allocation != nullptr)
      power.Charge(r.id, *r.allocation, r.gpu_power_w, 1, std::max(r.expected_end, from));
  }
  const std::vector<double> added = power.Added(alloc, gpu_w);
  Time start = from;
  for (size_t b = 0; b < added.size(); ++b) {
    if (added[b] <= 0) continue;
    const Time fits = power.WhenFits(static_cast<int>(b), alloc, gpu_w, from);
    if (fits == kTimeNever) {
      const InvPowerBudget& budget = snapshot.inventory->power_budgets()[b];
      return Unsatisfiable(fmt::format(
          "power budget '{}' ({}) never has the {} it needs, even when every running job has "
          "ended",
          budget.name, Kw(budget.watts), Kw(added[b])));
    }
    start = std::max(start, fits);
  }
  return start;
}

double AddedPower(const Inventory& inv, const Allocation& alloc, double gpu_w) {
  double w = 0;
  for (const NodeAllocation& na : alloc.nodes) {
    const std::optional<NodeIndex> n = inv.IndexOf(na.node);
    if (n) w += AddedOnNode(inv, inv.node(*n), na, gpu_w);
  }
  return w;
}

double IdleClusterPower(const Inventory& inv) {
  double w = 0;
  for (const InvNode& n : inv.nodes())
    w += n.idle_w;
  return w;
}

double PeakClusterPower(const Inventory& inv) {
  double w = 0;
  for (const InvNode& n : inv.nodes()) {
    w += n.idle_w;
    for (double rated : n.gpu_rated_w)
      w += (1 - inv.gpu_idle_fraction()) * rated;
  }
  return w;
}

}  // namespace shoal::sched
