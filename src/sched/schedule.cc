#include "sched/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "sched/earliest_fit.h"
#include "sched/limits.h"
#include "sched/placement.h"
#include "sched/power.h"
#include "sched/ranked.h"
#include "sched/shape_memo.h"
#include "sched/speed.h"
#include "sched/working_state.h"

namespace shoal::sched {

namespace {

// A job the walk considers, once screened.
struct Entry {
  size_t index;        // into Snapshot::pending
  const Request* req;  // the job's request (or its recompiled copy), kept off reserved nodes
  JobRank rank;
  const Request* base = nullptr;  // the request before reserved nodes were taken out
  uint64_t reserved_off = 0;      // bit r: reservation r keeps it off its nodes
  uint32_t shape_class = 0;       // JobInfo::shape_class when `base` is the job's own request

  // The memo keys of req's and base's shapes, worked out when first needed:
  // most jobs of a deep queue never reach a memo.
  ShapeKey Key() const {
    if (req == base) return BaseKey();
    if (!key_known) key_known = KeyOf(*req);
    return *key_known;
  }
  ShapeKey BaseKey() const {
    if (!base_key_known)
      base_key_known = shape_class != 0 ? ShapeKey{0, shape_class} : KeyOf(*base);
    return *base_key_known;
  }
  mutable std::optional<ShapeKey> key_known{};
  mutable std::optional<ShapeKey> base_key_known{};
};

struct Reservation {
  Time start;
  JobId job;
};

class Cycle {
 public:
  Cycle(const Snapshot& snap, Time now, const Policy& policy)
      : snap_(snap),
        inv_(*snap.inventory),
        now_(now),
        policy_(policy),
        params_(policy.params()),
        now_state_(inv_, snap.nodes),
        power_(inv_),
        eligibility_(inv_, &policy.filters()),
        rng_(params_.seed ^
             static_cast<uint64_t>(now.time_since_epoch().count()) * 0x9e3779b97f4a7c15ULL),
        sort_ctx_(SortContextOf(snap, now, params_)) {
    account_gpus_.assign(snap.accounts.size(), 0);
  }

  Plan Run() {
    plan_.stats.pending = static_cast<int>(snap_.pending.size());
    if (snap_.explain) plan_.pending.reserve(snap_.pending.size());
    TakeRunning();
    if (!snap_.explain && NothingCanStart()) return std::move(plan_);
    if (params_.speed_aware) BuildTimeline();
    pass_ = policy_.score().BeginPass(snap_, params_);
    Rank();
    tails_.emplace(
        order_, [this](uint32_t i) -> const Request& { return RequestOf(i); },
        [this](size_t k) {  // ranked jobs carry it; the rest of a trusted hint is read here
          return known_.empty() || known_[k] ? order_[k].shape_class
                                             : ShapeClassOf(order_[k].index);
        },
        inv_.partitions().size());
    if (!snap_.rank_hint.empty()) {
      plan_.ranked.reserve(order_.size());
      for (const Ranked& r : order_)
        plan_.ranked.push_back(r.index);
    }
    std::optional<Ranked> before;  // with a trusted hint, the order is checked as the walk goes
    for (size_t k = 0; k < order_.size(); ++k) {
      if (!snap_.explain) {
        k = NextToWalk(k);
        if (k == order_.size()) break;
      }
      if (k + kAhead < order_.size()) Prefetch(order_[k + kAhead].index);
      const Ranked& r = At(k);
      if (!known_.empty()) {
        SHOAL_CHECK(!before || !RankedBefore(r, *before),
                    "the ranked part of a rank hint is out of order");
        before = r;
      }
      std::optional<Entry> e = Screen(r);
      if (!e) continue;
      ++plan_.stats.considered;
      const bool reserved = reservation_.has_value();
      Walk(*e);
      if (!reserved && reservation_ && params_.shortest_backfill) {
        // The jobs right behind the reservation shortest first; beyond
        // kShortestFirstDepth, on in the queue's order.
        const size_t end = std::min(order_.size(), k + 1 + kShortestFirstDepth);
        if (!BackfillShortestFirst(k + 1, end)) break;
        k = end - 1;
        before.reset();
      }
    }
    return std::move(plan_);
  }

  // How many jobs behind the reservation backfill tries shortest first: the
  // work of a pass stays bounded in a queue of 100,000 (sorted, they are
  // walked out of their order in memory), as Slurm bounds its backfill
  // (bf_max_job_test).
  static constexpr size_t kShortestFirstDepth = 10000;

  // The jobs order_[from, end), behind the reservation just made, tried by
  // their time limits, shortest first, ties in queue order
  // (PolicyParams::shortest_backfill). Those of a shape that cannot start
  // (ClassesClosed's rule, job by job) are passed over without a decision,
  // as the queue-order walk passes them, unless the pass explains. False
  // once nothing more can start.
  bool BackfillShortestFirst(size_t from, size_t end) {
    auto closed = [&](size_t k) {  // no preemption behind a reservation
      const uint32_t c = tails_->ClassAt(k);
      return !snap_.explain && c != 0 &&
             ClassClosed(c, false, [&] { return RequestOf(order_[k].index).time_limit; });
    };
    auto nothing_free = [&] {
      return !snap_.explain && NothingFreeFrom(static_cast<ptrdiff_t>(from));
    };
    if (nothing_free()) return false;
    // The jobs left by shape class, each class a heap by (time limit, place),
    // and a heap of each class's shortest: the shortest job of all is always
    // on top. A class that closes closes its longer jobs too, and leaves (a
    // deep queue's classes mostly close after a try or two). Jobs without a
    // class are one list, sorted, since each is tried.
    struct Key {
      Duration limit;
      uint32_t place;  // in order_
      uint32_t index;  // into snap_.pending, to read it ahead
      bool operator>(const Key& o) const {
        return limit != o.limit ? limit > o.limit : place > o.place;
      }
    };
    const uint32_t classless = static_cast<uint32_t>(tails_->Classes().size());
    std::vector<std::vector<Key>> classes(classless + 1);
    for (size_t k = from; k < end; ++k) {
      if (closed(k)) continue;
      const uint32_t c = tails_->ClassAt(k);
      const uint32_t index = order_[k].index;
      classes[c == 0 ? classless : tails_->ClassIndex(c)].push_back(
          {RequestOf(index).time_limit, static_cast<uint32_t>(k), index});
    }
    constexpr auto later = std::greater<>();
    std::vector<std::pair<Key, uint32_t>> tops;  // each class's shortest, and the class
    auto top_later = [](const std::pair<Key, uint32_t>& a, const std::pair<Key, uint32_t>& b) {
      return a.first > b.first;
    };
    for (uint32_t c = 0; c < classless; ++c) {
      if (classes[c].empty()) continue;
      std::make_heap(classes[c].begin(), classes[c].end(), later);
      tops.emplace_back(classes[c].front(), c);
    }
    // The list is walked out of the jobs' order in memory: read ahead.
    std::vector<Key>& listed = classes[classless];
    std::sort(listed.begin(), listed.end(), [](const Key& a, const Key& b) { return b > a; });
    size_t next_listed = 0;
    if (!listed.empty()) tops.emplace_back(listed.front(), classless);
    std::make_heap(tops.begin(), tops.end(), top_later);
    while (!tops.empty()) {
      std::pop_heap(tops.begin(), tops.end(), top_later);
      const uint32_t c = tops.back().second;
      const uint32_t k = tops.back().first.place;
      tops.pop_back();
      const Key* next = nullptr;  // the class's next, once this one is tried
      if (c == classless) {
        if (++next_listed + kAhead < listed.size()) {
          Prefetch(listed[next_listed + kAhead].index);
          __builtin_prefetch(&order_[listed[next_listed + kAhead].place]);
        }
      } else {
        std::pop_heap(classes[c].begin(), classes[c].end(), later);
        classes[c].pop_back();
      }
      if (!closed(k)) {
        if (std::optional<Entry> e = Screen(At(k))) {
          ++plan_.stats.considered;
          Walk(*e);
          if (nothing_free()) return false;
        }
      }
      if (c == classless) {
        if (next_listed < listed.size()) next = &listed[next_listed];
      } else if (!classes[c].empty() && !closed(classes[c].front().place)) {
        next = &classes[c].front();
      }
      if (next != nullptr) {
        tops.emplace_back(*next, c);
        std::push_heap(tops.begin(), tops.end(), top_later);
      }
    }
    return true;
  }

 private:
  PlaceContext Ctx() {
    return PlaceContext{policy_.score(), pass_.get(), rng_, params_, eligibility_, plan_.stats};
  }

  void TakeRunning() {
    preempted_.assign(snap_.running.size(), false);
    for (const JobInfo& r : snap_.running) {
      if (r.array_id != 0) ++array_running_[r.array_id];
      if (r.allocation == nullptr) continue;
      // A running job on a node the inventory no longer has keeps nothing here;
      // the caller reconciles it.
      if (now_state_.Allocate(*r.allocation)) ChargeAccount(r, r.allocation->TotalGpus(), 1);
      power_.Charge(r.id, *r.allocation, r.gpu_power_w, 1, std::max(r.expected_end, now_));
    }
  }

  // What a job holds, charged to its account and to its user's use of its
  // QoS (`jobs` is +1 when it starts, -1 when it leaves).
  void ChargeAccount(const JobInfo& j, int gpus, int jobs) {
    if (j.account >= 0 && static_cast<size_t>(j.account) < account_gpus_.size()) {
      account_gpus_[static_cast<size_t>(j.account)] += gpus;
    }
    if (j.qos >= 0 && j.spec != nullptr) {
      QosUse& use = qos_use_[{j.qos, j.spec->user}];
      use.gpus += gpus;
      use.jobs += jobs;
    }
  }

  void Wait(const JobInfo& j, PendingReason reason, std::string detail = {}) {
    if (!snap_.explain) return;
    PendingDecision d;
    d.job = j.id;
    d.reason = reason;
    d.detail = std::move(detail);
    plan_.pending.push_back(std::move(d));
  }

  // Records why a job waits (a pass that need not explain records nothing).
  void Decide(PendingDecision d) {
    if (snap_.explain) plan_.pending.push_back(std::move(d));
  }

  // One dependency: kNone when satisfied, kDependency while it may still be,
  // kDependencyNeverSatisfied (with the reason) when it never can be.
  std::pair<PendingReason, std::string> CheckDependency(const JobInfo& j,
                                                        const Dependency& d) const {
    if (d.type == DependencyType::kSingleton) {
      return {j.singleton_blocked ? PendingReason::kDependency : PendingReason::kNone, {}};
    }
    auto it = snap_.dependency_states.find(d.job);
    if (it == snap_.dependency_states.end()) {
      return {PendingReason::kDependencyNeverSatisfied,
              fmt::format("job {} is unknown", ToString(d.job))};
    }
    const JobState st = it->second;
    if (d.type == DependencyType::kAfter) {  // started (or ended, or was cancelled)
      return {st == JobState::kPending ? PendingReason::kDependency : PendingReason::kNone, {}};
    }
    if (!IsTerminal(st)) return {PendingReason::kDependency, {}};
    const bool ok = d.type == DependencyType::kAfterAny ||
                    (d.type == DependencyType::kAfterOk && st == JobState::kCompleted) ||
                    (d.type == DependencyType::kAfterNotOk && st != JobState::kCompleted);
    if (ok) return {PendingReason::kNone, {}};
    return {PendingReason::kDependencyNeverSatisfied,
            fmt::format("job {} ended {}", ToString(d.job), JobStateName(st))};
  }

  // All of a job's dependencies (or, joined with ?, any one of them): kNone
  // when satisfied. Any-of never can be only when none of them can.
  std::pair<PendingReason, std::string> CheckDependencies(const JobInfo& j) const {
    if (j.dependencies == nullptr || j.dependencies->empty()) return {PendingReason::kNone, {}};
    bool waiting = false;
    std::string never;  // the first dependency that can never be satisfied
    for (const Dependency& d : *j.dependencies) {
      auto [reason, detail] = CheckDependency(j, d);
      if (reason == PendingReason::kNone && j.dependency_any) return {PendingReason::kNone, {}};
      if (reason == PendingReason::kDependencyNeverSatisfied) {
        if (!j.dependency_any) return {reason, std::move(detail)};
        if (never.empty()) never = std::move(detail);
      }
      waiting |= reason == PendingReason::kDependency;
    }
    if (waiting) return {PendingReason::kDependency, {}};
    if (!j.dependency_any) return {PendingReason::kNone, {}};
    if (j.dependencies->size() == 1) return {PendingReason::kDependencyNeverSatisfied, never};
    return {PendingReason::kDependencyNeverSatisfied,
            fmt::format("none of its {} dependencies can be satisfied ({}, ...)",
                        j.dependencies->size(), never)};
  }

  // Every pending job's place in the order (order_), taken in the
  // snapshot's rank_hint order when it has one. What keeps a job from being
  // considered (held, dependencies, limits, ...) is looked at only when the
  // walk reaches it (Screen), so that a pass that ends early does not screen
  // a deep queue; a job whose request must be recompiled is screened here,
  // as its partition may change. Under a sort whose values are fixed while
  // jobs wait, the hint's ranked part is taken as it is and ranked only as
  // the walk reaches it (At), and the other jobs are merged in.
  void Rank() {
    const size_t n = snap_.pending.size();
    order_.reserve(n);
    if (snap_.rank_hint.empty()) {
      for (uint32_t i = 0; i < n; ++i)
        RankOne(i);
      SortRanked(order_);
      return;
    }
    SHOAL_CHECK(snap_.rank_hint.size() == n, "a rank hint must list every pending job once");
    std::vector<bool> seen(n);
    for (uint32_t i : snap_.rank_hint) {
      SHOAL_CHECK(i < n && !seen[i], "a rank hint must list every pending job once");
      seen[i] = true;
    }
    const std::vector<uint32_t>& hint = snap_.rank_hint;
    const size_t trusted =
        policy_.sort().FixedWhilePending(params_) ? std::min(snap_.rank_hint_ranked, n) : 0;
    for (size_t k = trusted; k < n; ++k) {
      if (k + kAhead < n) Prefetch(hint[k + kAhead]);
      RankOne(hint[k]);
    }
    SortRanked(order_);
    if (trusted > 0) MergeIntoTrusted(hint, trusted);
  }

  // order_ holds the hint's other jobs, sorted: each goes where it ranks
  // among the trusted ones, found by bisection (which ranks only the
  // trusted jobs it compares with).
  void MergeIntoTrusted(const std::vector<uint32_t>& hint, size_t trusted) {
    const std::vector<Ranked> others = std::move(order_);
    order_.assign(trusted + others.size(), Ranked{});
    known_.assign(order_.size(), 0);
    size_t taken = 0;  // of the trusted jobs
    size_t out = 0;
    const auto take_until = [&](size_t end) {
      for (; taken < end; ++taken)
        order_[out++].index = hint[taken];
    };
    for (const Ranked& other : others) {
      size_t lo = taken, hi = trusted;  // the first trusted job ranked after `other`
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (RankedBefore(other, RankOf(hint[mid]))) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      take_until(lo);
      known_[out] = 1;
      order_[out++] = other;
    }
    take_until(trusted);
  }

  // The jobs of a deep queue lie anywhere in `pending`, in no order the
  // hardware can guess: the rank and the walk ask for the job kAhead places
  // on, the cache lines that ranking and screening read.
  static constexpr size_t kAhead = 8;
  void Prefetch(uint32_t i) const {
    const JobInfo& later = snap_.pending[i];
    __builtin_prefetch(&later.id);
    __builtin_prefetch(&later.attained_gpu_s);
    __builtin_prefetch(&later.request);
    __builtin_prefetch(&later.request.total_gpus);
  }

  // The k-th job of the order, ranked now if the order was taken on trust.
  const Ranked& At(size_t k) {
    if (!known_.empty() && !known_[k]) {
      const JobInfo& j = snap_.pending[order_[k].index];
      SHOAL_CHECK(j.request.inventory_version == inv_.version(),
                  "the ranked part of a rank hint holds a request compiled for another inventory");
      RankInto(order_[k], order_[k].index);
      known_[k] = 1;
    }
    return order_[k];
  }

  void RankOne(uint32_t i) {
    const JobInfo& j = snap_.pending[i];
    if (j.request.inventory_version != inv_.version()) {
      std::optional<Entry> e = ScreenNow(i, {});
      if (!e) return;
      prescreened_.emplace(i, *e);
    }
    RankInto(order_.emplace_back(), i);
  }

  // A pending job's place (its request screened and recompiled by RankOne, if it had to be).
  Ranked RankOf(uint32_t i) const {
    Ranked r;
    RankInto(r, i);
    return r;
  }
  // The same, written into `r` field by field: a Ranked built aside and
  // copied in stalled on the copy, for every job of a deep queue at every pass.
  void RankInto(Ranked& r, uint32_t i) const {
    const JobInfo& j = snap_.pending[i];
    r.rank.tier = inv_.partitions()[static_cast<size_t>(RequestOf(i).partition)].priority_tier;
    r.rank.value = policy_.sort().Value(sort_ctx_, j);
    r.submit = j.submit;
    r.id = j.id;
    r.index = i;
    r.shape_class = ShapeClassOf(i);
  }

  // The job's shape class when the walk places it with its own request
  // (reservations may change the request: KeepOffReserved); else 0.
  uint32_t ShapeClassOf(uint32_t i) const {
    const JobInfo& j = snap_.pending[i];
    const bool own_request = &RequestOf(i) == &j.request && snap_.reservations.empty();
    return own_request ? j.shape_class : 0;
  }

  // The job as the walk considers it, if it may be considered now; if not,
  // it waits with the reason.
  std::optional<Entry> Screen(const Ranked& r) {
    if (!prescreened_.empty()) {
      auto it = prescreened_.find(r.index);
      if (it != prescreened_.end()) {
        Entry e = it->second;
        e.rank = r.rank;  // screened before it was ranked
        return e;
      }
    }
    return ScreenNow(r.index, r.rank);
  }

  // The entry (its request kept off reserved nodes), if the job may be
  // considered now. One named result, built in place: an Entry built aside
  // and copied out stalled on the copy, once per job walked.
  std::optional<Entry> ScreenNow(uint32_t index, JobRank rank) {
    std::optional<Entry> e;
    const JobInfo& j = snap_.pending[index];
    if (const Request* req = Admit(j); req != nullptr) {
      e.emplace(index, req, rank, req);
      e->req = KeepOffReserved(j, req, &e->reserved_off);
      e->shape_class = req == &j.request ? j.shape_class : 0;
    }
    return e;
  }

  // The request the job is considered with (recompiled if the inventory
  // changed), or null when it may not be considered now and waits (with the reason).
  const Request* Admit(const JobInfo& j) {
    if (j.held) {
      Wait(j, PendingReason::kHeld);
      return nullptr;
    }
    if (j.begin_time && *j.begin_time > now_) {
      Wait(j, PendingReason::kBeginTime);
      return nullptr;
    }
    if (auto [reason, detail] = CheckDependencies(j); reason != PendingReason::kNone) {
      Wait(j, reason, std::move(detail));
      return nullptr;
    }
    const Request* req = &j.request;
    if (req->inventory_version != inv_.version()) {
      if (j.spec == nullptr) {
        Wait(j, PendingReason::kUnsatisfiable,
             "the request was compiled for another cluster layout");
        return nullptr;
      }
      Result<Request> r = CompileRequest(inv_, *j.spec);
      if (!r.ok()) {
        Wait(j, PendingReason::kUnsatisfiable, r.status().message());
        return nullptr;
      }
      recompiled_.push_back(std::move(r).value());
      req = &recompiled_.back();
    }
    const Status* sat = req == &j.request ? j.satisfiable.get() : nullptr;
    if (sat == nullptr) sat = satisfiable_.Find(*req);
    if (sat == nullptr) {
      satisfiable_.Put(*req, CheckSatisfiable(inv_, *req));
      sat = satisfiable_.Find(*req);
    }
    if (!sat->ok()) {
      Wait(j, PendingReason::kUnsatisfiable, sat->message());
      return nullptr;
    }
    const Partition& part = inv_.partitions()[static_cast<size_t>(req->partition)];
    if (!part.up) {
      Wait(j, PendingReason::kPartitionDown, fmt::format("partition '{}' is down", part.name));
      return nullptr;
    }
    if (std::string limit = PartitionLimit(part, j, *req); !limit.empty()) {
      Wait(j, PendingReason::kPartitionLimit, std::move(limit));
      return nullptr;
    }
    if (std::string limit = QosJobLimit(snap_, j, *req); !limit.empty()) {
      Wait(j, PendingReason::kQosLimit, std::move(limit));
      return nullptr;
    }
    if (std::string why = ReservationWait(snap_, now_, j); !why.empty()) {
      PendingDecision d;
      d.job = j.id;
      d.reason = PendingReason::kReservation;
      d.detail = std::move(why);
      if (j.reservation >= 0 && now_ < snap_.reservations[static_cast<size_t>(j.reservation)].start)
        d.estimated_start = snap_.reservations[static_cast<size_t>(j.reservation)].start;
      Decide(std::move(d));
      return nullptr;
    }
    return req;
  }

  // Whether no job can start whatever the order, nor preempt: no usable
  // node has a whole GPU free, every waiting job needs one (as the driver
  // counts), and the policy does not preempt. A pass that need not explain
  // then ends before ranking, which is most of a pass over a deep queue on
  // a full cluster.
  bool NothingCanStart() const {
    return snap_.pending_not_whole_gpus == 0 && policy_.preempt() == nullptr &&
           now_state_.max_gpus() >= 1 && now_state_.AtLeast(1).None();
  }

  // In a pass that need not explain (Snapshot::explain false), the next
  // place from `next` on whose job might start or preempt; order_.size()
  // when none can and the pass ends. None can when, in strict mode, every
  // partition with jobs left is blocked; otherwise when no usable node has a
  // free GPU, all of them need whole GPUs, and preemption is over for the
  // pass, or when each of them is of a shape class that could neither be
  // placed nor make room by preemption earlier in the pass (ClassesClosed).
  // Short of that, the jobs of a class closed so (not fitting now, refused
  // preemption) are passed over unscreened, for the same reasons: in a deep
  // queue most jobs are of a few classes, and one job of a rare class far
  // down the order kept the pass screening every job before it.
  size_t NextToWalk(size_t next) {
    const auto from = static_cast<ptrdiff_t>(next);
    if (policy_.queue_mode() == QueueMode::kStrict) {
      const uint64_t all = (uint64_t{2} << (inv_.partitions().size() - 1)) - 1;
      const uint64_t open = ~blocked_partition_ & all;
      if (open == 0) return order_.size();
      if (open >> RequestOf(At(next).index).partition & 1) return next;  // it may start
      for (uint64_t p = open; p != 0; p &= p - 1) {
        if (tails_->LastInPartition(std::countr_zero(p)) >= from) return next;
      }
      return order_.size();
    }
    const bool preempting = policy_.preempt() != nullptr && MayStillPreempt(At(next));
    if (!preempting && NothingFreeFrom(from)) return order_.size();
    if (ClassesClosed(from, preempting)) return order_.size();
    for (size_t k = next; k < order_.size(); ++k) {
      const uint32_t c = tails_->ClassAt(k);
      if (c == 0 || !now_memo_.HasClass(c) || (preempting && !preempt_failed_.HasClass(c)))
        return k;
    }
    return order_.size();
  }

  // Whether every job from order[from] on has a shape class whose shape
  // did not fit now earlier in the pass (what is free only shrinks until a
  // preemption, which forgets it) and, while preemption may still happen,
  // could not make room by preemption either (the jobs after one that could
  // not have no more victims). Behind a backfill reservation, a class whose
  // shape did not fit beside it is closed too once all its jobs left would
  // end after the reservation begins.
  bool ClassesClosed(ptrdiff_t from, bool preempting) {
    if (tails_->LastClassless() >= from) return false;
    const std::vector<OrderTails::ClassTail>& classes = tails_->Classes();
    const auto closed = [&](size_t k) {
      return ClassClosed(classes[k].shape_class, preempting,
                         [&] { return tails_->ShortestLimitFrom(k, from); });
    };
    // The class found open last time is most likely open still.
    if (open_class_ < classes.size() && classes[open_class_].last >= from && !closed(open_class_))
      return false;
    for (size_t k = 0; k < classes.size() && classes[k].last >= from; ++k) {
      if (!closed(k)) {
        open_class_ = k;
        return false;
      }
    }
    return true;
  }

  // Whether no job of shape class `c` can start now: its shape did not fit
  // (nor, while preemption may happen, make room by preemption), or, behind
  // a backfill reservation, it did not fit beside the reservation and the
  // jobs would end after it begins (`shortest_limit()`: the shortest of
  // their time limits, asked only then).
  template <typename Limit>
  bool ClassClosed(uint32_t c, bool preempting, Limit shortest_limit) {
    if (now_memo_.HasClass(c)) return !preempting || preempt_failed_.HasClass(c);
    if (!reservation_ || !long_memo_.HasClass(c)) return false;
    return now_ + shortest_limit() > reservation_->start;
  }

  // No GPU is free, and every job from order_[from] on wants whole GPUs.
  bool NothingFreeFrom(ptrdiff_t from) {
    return now_state_.max_gpus() >= 1 && now_state_.AtLeast(1).None() &&
           tails_->LastNotWholeGpus() < from;
  }

  // The request a ranked job is placed with (kept off reserved nodes or not: the same shape of
  // demand).
  const Request& RequestOf(uint32_t index) const {
    if (!prescreened_.empty()) {
      auto it = prescreened_.find(index);
      if (it != prescreened_.end()) return *it->second.req;
    }
    return snap_.pending[index].request;
  }

  bool OverQosLimit(const JobInfo& j, const Request& req, std::string* detail) const {
    if (j.qos < 0 || static_cast<size_t>(j.qos) >= snap_.qos.size() || j.spec == nullptr)
      return false;
    const QosInfo& q = snap_.qos[static_cast<size_t>(j.qos)];
    if (q.max_gpus_per_user <= 0 && q.max_jobs_per_user <= 0) return false;
    QosUse use;
    if (auto it = qos_use_.find({j.qos, j.spec->user}); it != qos_use_.end()) use = it->second;
    if (q.max_jobs_per_user > 0 && use.jobs + 1 > q.max_jobs_per_user) {
      *detail = fmt::format("user '{}' runs {} jobs of QoS '{}', the most it allows", j.spec->user,
                            use.jobs, q.name);
      return true;
    }
    if (q.max_gpus_per_user > 0 && use.gpus + req.total_gpus > q.max_gpus_per_user) {
      *detail = fmt::format("user '{}' holds {} of the {} GPUs QoS '{}' allows a user",
                            j.spec->user, use.gpus, q.max_gpus_per_user, q.name);
      return true;
    }
    return false;
  }

  // The request as it may run now: within its own reservation's nodes, and
  // off the nodes of every other reservation that is on, or begins before
  // the job would have ended by its time limit. `off` gets the latter.
  const Request* KeepOffReserved(const JobInfo& j, const Request* req, uint64_t* off) {
    *off = 0;
    if (snap_.reservations.empty()) return req;
    const Time until = now_ + req->time_limit;
    for (size_t r = 0; r < snap_.reservations.size() && r < 64; ++r) {
      if (static_cast<int>(r) == j.reservation) continue;
      const ReservationInfo& resv = snap_.reservations[r];
      if (resv.start < until && now_ < resv.end) *off |= uint64_t{1} << r;
    }
    if (*off == 0 && j.reservation < 0) return req;
    const ReservedKey key{req->allowed_nodes.get(), j.reservation, *off};
    std::shared_ptr<const NodeBitset>& mask = reserved_masks_[key];
    if (mask == nullptr) {
      NodeBitset allowed(inv_.size());
      if (j.reservation >= 0) {
        allowed = snap_.reservations[static_cast<size_t>(j.reservation)].nodes;
      } else {
        for (auto& w : allowed.words())
          w = ~uint64_t{0};
      }
      if (req->allowed_nodes != nullptr) {
        for (size_t w = 0; w < allowed.words().size(); ++w)
          allowed.words()[w] &= req->allowed_nodes->words()[w];
      }
      for (size_t r = 0; r < 64; ++r) {
        if ((*off >> r & 1) == 0) continue;
        const NodeBitset& taken = snap_.reservations[r].nodes;
        for (size_t w = 0; w < allowed.words().size() && w < taken.words().size(); ++w)
          allowed.words()[w] &= ~taken.words()[w];
      }
      mask = std::make_shared<const NodeBitset>(std::move(allowed));
    }
    recompiled_.push_back(*req);
    recompiled_.back().allowed_nodes = mask;
    return &recompiled_.back();
  }

  bool OverAccountLimit(const JobInfo& j, const Request& req, std::string* detail) const {
    if (j.account < 0 || static_cast<size_t>(j.account) >= snap_.accounts.size()) return false;
    const AccountInfo& a = snap_.accounts[static_cast<size_t>(j.account)];
    if (a.max_gpus <= 0) return false;
    const int held = account_gpus_[static_cast<size_t>(j.account)];
    if (held + req.total_gpus <= a.max_gpus) return false;
    *detail = fmt::format("account '{}' holds {} of its {} GPUs", a.name, held, a.max_gpus);
    return true;
  }

  // Places on `state`, remembering shapes that did not fit in `memo`.
  std::optional<Allocation> TryPlace(const WorkingState& state, const Request& req, ShapeKey key,
                                     ShapeMemo<bool>& memo) {
    if (memo.Find(req, key) != nullptr) {
      ++plan_.stats.shape_cache_hits;
      return std::nullopt;
    }
    PlaceContext ctx = Ctx();
    std::optional<Allocation> a = Place(state, req, ctx);
    if (!a) memo.Put(req, key, true);
    return a;
  }

  // A job that would end after the reservation begins: on what the
  // reservation leaves free (EASY), or not at all when only jobs that end
  // before it may pass (PolicyParams::long_backfill). Refused either way, its
  // shape is remembered as not fitting beside the reservation.
  std::optional<Allocation> TryLong(const Request& req, ShapeKey key) {
    if (params_.long_backfill) return TryPlace(*long_ok_, req, key, long_memo_);
    long_memo_.Put(req, key, true);
    return std::nullopt;
  }

  // Why a job that does not fit now waits.
  std::pair<PendingReason, std::string> Classify(const Request& req, ShapeKey key) {
    if (const auto* c = classified_.Find(req, key)) return *c;
    std::pair<PendingReason, std::string> out{PendingReason::kResources, {}};
    Status cap = CheckCapacity(inv_, req, snap_.nodes);
    if (!cap.ok()) {
      out = {PendingReason::kNodesUnavailable, cap.message()};
      const uint64_t all_models =
          inv_.models().size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << inv_.models().size()) - 1;
      if (req.shape != Shape::kCpuOnly && (req.model_mask & all_models) != all_models) {
        bool any_usable = false;
        for (NodeIndex n = 0; n < inv_.size() && !any_usable; ++n) {
          const NodeStatus st = n < snap_.nodes.size() ? snap_.nodes[n] : NodeStatus{};
          any_usable = st.state == NodeState::kUp && NodeEligible(inv_.node(n), req);
        }
        if (!any_usable) {
          out = {PendingReason::kGpuModelUnavailable,
                 fmt::format("no usable node has GPU model {}", inv_.ModelNames(req.model_mask))};
        }
      }
    }
    classified_.Put(req, key, out);
    return out;
  }

  void Walk(const Entry& e) {
    const JobInfo& j = snap_.pending[e.index];
    const Request& req = timeline_ && j.model_speed ? OnModelsItRuns(j, *e.req) : *e.req;
    std::string detail;
    if (OverAccountLimit(j, req, &detail)) {
      Wait(j, PendingReason::kAccountLimit, std::move(detail));
      return;
    }
    if (OverQosLimit(j, req, &detail)) {
      Wait(j, PendingReason::kQosLimit, std::move(detail));
      return;
    }
    if (j.array_id != 0 && j.array_max_running > 0 &&
        array_running_[j.array_id] >= j.array_max_running) {
      Wait(j, PendingReason::kArrayLimit,
           fmt::format("{} of its array's tasks run, the most it allows",
                       array_running_[j.array_id]));
      return;
    }
    const QueueMode mode = policy_.queue_mode();
    if (mode == QueueMode::kStrict && blocked_partition_ >> req.partition & 1) {
      Wait(j, PendingReason::kPriority);
      return;
    }
    const bool long_job = reservation_ && now_ + req.time_limit > reservation_->start;
    if (PowerBlockedBefore(j, req)) return;
    if (timeline_ && j.model_speed && WalkBySpeed(j, req, long_job)) return;
    const ShapeKey key = &req == e.req ? e.Key() : KeyOf(req);
    std::optional<Allocation> alloc =
        long_job ? TryLong(req, key) : TryPlace(now_state_, req, key, now_memo_);
    if (alloc && !PowerAllows(j, req, alloc, long_job ? *long_ok_ : now_state_, &e)) return;
    if (alloc) {
      Commit(j, std::move(*alloc), long_job, /*after_preemption=*/false);
      return;
    }
    if (long_job && TryPlace(now_state_, req, key, now_memo_)) {
      // It would fit now, but only on what the reservation needs, or it
      // would run past the reservation where only shorter jobs may pass.
      Wait(j, PendingReason::kPriority,
           params_.long_backfill ? "" : "it would still run when the first job waiting starts");
      return;
    }
    if (policy_.preempt() != nullptr && TryPreempt(PreemptorEntry(e, j))) return;
    if (!snap_.explain && !(mode == QueueMode::kBackfill && !reservation_)) {
      // Neither recorded nor reserving: why it waits changes nothing.
      if (mode == QueueMode::kStrict) blocked_partition_ |= uint64_t{1} << req.partition;
      return;
    }
    auto [reason, why] = Classify(*e.base, e.BaseKey());
    if (reason == PendingReason::kResources && e.reserved_off != 0 &&
        TryPlace(now_state_, *e.base, e.BaseKey(), base_memo_)) {
      // It would fit now, but only on nodes reserved for others.
      reason = PendingReason::kReservation;
      why = fmt::format("the nodes it could use now are reserved: {}",
                        ReservationNames(snap_, e.reserved_off));
    }
    PendingDecision d{j.id, reason, std::move(why), kTimeNever, {}};
    if (mode == QueueMode::kBackfill && !reservation_ && reason == PendingReason::kResources)
      Reserve(req, d);
    if (mode == QueueMode::kStrict) blocked_partition_ |= uint64_t{1} << req.partition;
    Decide(std::move(d));
  }

  // A job of a shape and draw that a budget refused earlier in the pass
  // waits as that one did: the budgets' draw only grows within a pass (but
  // for preemption, which forgets what was refused), so placing it again
  // would only be refused again.
  bool PowerBlockedBefore(const JobInfo& j, const Request& req) {
    auto it = power_blocked_.find(j.gpu_power_w);
    if (it == power_blocked_.end()) return false;
    const PendingDecision* before = it->second.Find(req);
    if (before == nullptr) return false;
    PendingDecision d = *before;
    d.job = j.id;
    Decide(std::move(d));
    if (policy_.queue_mode() == QueueMode::kStrict)
      blocked_partition_ |= uint64_t{1} << req.partition;
    return true;
  }

  // True when `alloc` (or another placement off the budgets it would cross)
  // may start under every power budget and a power reservation. False when
  // the job was dealt with here: it waits (power_budget, or priority behind
  // a reservation), or a `preemptor` started by displacing lower-ranked jobs.
  bool PowerAllows(const JobInfo& j, const Request& req, std::optional<Allocation>& alloc,
                   const WorkingState& state, const Entry* preemptor = nullptr) {
    const double w = j.gpu_power_w;
    const Time end = now_ + req.time_limit;
    const bool fits = power_.Crossed(*alloc, w) < 0;
    if (fits && power_.KeepsReservation(*alloc, w, end)) return true;
    std::optional<Allocation> elsewhere;
    if (!fits) {
      elsewhere = PlaceUnderBudgets(power_, req, *alloc, w, [&](const Request& r) {
        PlaceContext ctx = Ctx();
        return Place(state, r, ctx);
      });
      if (elsewhere && power_.KeepsReservation(*elsewhere, w, end)) {
        alloc = std::move(elsewhere);
        return true;
      }
    }
    if (fits || elsewhere) {  // it would take the power a job waiting for it has reserved
      Wait(j, PendingReason::kPriority, "it would delay a job that waits for power");
    } else if (preemptor != nullptr && policy_.preempt() != nullptr && TryPreempt(*preemptor)) {
      return false;  // started in the power of lower-ranked jobs
    } else {
      PendingDecision d = power_.Wait(j.id, *alloc, w, now_);
      if (policy_.queue_mode() == QueueMode::kBackfill && !power_.reserved() &&
          d.estimated_start != kTimeNever)
        power_.Reserve(*alloc, w, d.estimated_start);
      power_blocked_[w].Put(req, d);
      Decide(std::move(d));
    }
    if (policy_.queue_mode() == QueueMode::kStrict)
      blocked_partition_ |= uint64_t{1} << req.partition;
    return false;
  }

  // The GPUs of each model that running work frees, and when.
  void BuildTimeline() {
    timeline_.emplace(inv_, now_);
    for (const JobInfo& r : snap_.running)
      timeline_->AddRunning(inv_, r);
  }

  // A speed-aware job makes room by preemption only on the models it runs
  // fastest on. Room on a slower model it would not take while it may wait
  // for a faster one (WalkBySpeed), and the jobs preempted for it would start
  // there again at the next pass, to be preempted again, pass after pass.
  Entry PreemptorEntry(const Entry& e, const JobInfo& j) {
    if (!timeline_ || !j.model_speed) return e;
    const std::vector<double>& speed = *j.model_speed;
    const uint64_t accepted = e.req->model_mask;
    double fastest_speed = 0;
    for (size_t m = 0; m < speed.size() && m < 64; ++m) {
      if (accepted >> m & 1) fastest_speed = std::max(fastest_speed, speed[m]);
    }
    uint64_t fastest = 0;
    for (size_t m = 0; m < speed.size() && m < 64; ++m) {
      if ((accepted >> m & 1) && speed[m] > 0 && speed[m] >= fastest_speed)
        fastest |= uint64_t{1} << m;
    }
    if (fastest == 0 || fastest == accepted) return e;
    Request& kept = recompiled_.emplace_back(*e.req);
    kept.model_mask = fastest;
    Entry out = e;
    out.req = &kept;
    out.key_known.reset();
    return out;
  }

  // `req` kept to the models where the job's speed is not 0 (it cannot run
  // on the others), unless that leaves none.
  const Request& OnModelsItRuns(const JobInfo& j, const Request& req) {
    const uint64_t runs = RunnableModels(*j.model_speed);
    if ((req.model_mask & runs) == 0 || (req.model_mask & ~runs) == 0) return req;
    Request& kept = recompiled_.emplace_back(req);
    kept.model_mask &= runs;
    return kept;
  }

  // A job of known speed: on each model it accepts, when it would start (now
  // if it fits now, else when the timeline frees room after the jobs that
  // wait for that model) and finish. It starts on the model that finishes it
  // soonest if that one fits now, or waits for it if some slower one fits
  // now. False when no model fits now: it then goes on as any job
  // (reservation, preemption), counted as waiting for its best model.
  bool WalkBySpeed(const JobInfo& j, const Request& req, bool long_job) {
    ModelChoice c =
        ChooseModel(*j.model_speed, req, now_, params_.speed_slack, *timeline_, [&](int model) {
          Request on_model = req;
          on_model.model_mask = uint64_t{1} << model;
          const ShapeKey key = KeyOf(on_model);
          return long_job ? TryPlace(*long_ok_, on_model, key, long_memo_)
                          : TryPlace(now_state_, on_model, key, now_memo_);
        });
    if (c.best < 0) return false;
    ModelOption& best = c.options[static_cast<size_t>(c.best)];
    const std::string& best_name = inv_.models()[static_cast<size_t>(best.model)];
    if (best.now) {
      Request on_best = req;  // placed again for power, it stays on the model chosen
      on_best.model_mask = uint64_t{1} << best.model;
      if (!PowerAllows(j, on_best, best.now, long_job ? *long_ok_ : now_state_)) return true;
      std::string why;
      if (c.runner_up >= 0) {
        const ModelOption& other = c.options[static_cast<size_t>(c.runner_up)];
        why = fmt::format("on {}: expected to end in {}, against {} on {}", best_name,
                          FormatDuration(best.finish - now_), FormatDuration(other.finish - now_),
                          inv_.models()[static_cast<size_t>(other.model)]);
      }
      Commit(j, std::move(*best.now), long_job, /*after_preemption=*/false, std::move(why));
      return true;
    }
    // It waits for the model that finishes it soonest: later jobs are served after it there.
    timeline_->Queue(best.model, req.total_gpus, best.finish);
    if (c.best_now < 0) return false;  // nothing fits now: on as any job
    if (policy_.queue_mode() == QueueMode::kStrict)
      blocked_partition_ |= uint64_t{1} << req.partition;
    const ModelOption& now = c.options[static_cast<size_t>(c.best_now)];
    Wait(j, PendingReason::kResources,
         fmt::format("waits for {}: expected to end there in {}, sooner than in {} on the {} free "
                     "now",
                     best_name, FormatDuration(best.finish - now_),
                     FormatDuration(now.finish - now_),
                     inv_.models()[static_cast<size_t>(now.model)]));
    return true;
  }

  void Commit(const JobInfo& j, Allocation alloc, bool long_job, bool after_preemption,
              std::string detail = {}) {
    if (!after_preemption) now_state_.Allocate(alloc);
    // Placed on what a victim of this pass frees (beyond what its preemptor
    // took): it too starts once the victims have stopped.
    if (held_ && !after_preemption) {
      after_preemption = !held_->CanAllocate(alloc).ok();
      if (!after_preemption) held_->Allocate(alloc);
    }
    if (reservation_) {
      if (long_job)
        SHOAL_CHECK(shadow_->AllocateAlike(alloc), "backfill placement beside the reservation");
      for (const NodeAllocation& na : alloc.nodes) {
        const NodeIndex n = *inv_.IndexOf(na.node);
        long_ok_->SetToMin(n, now_state_, *shadow_);
      }
    }
    ChargeAccount(j, alloc.TotalGpus(), 1);
    power_.Charge(j.id, alloc, j.gpu_power_w, 1, now_ + j.request.time_limit);
    if (j.array_id != 0) ++array_running_[j.array_id];
    if (timeline_) {
      const int model = AllocationModel(inv_, alloc);
      timeline_->AddRelease(model, now_ + ExpectedRunTime(j, model), alloc.TotalGpus());
    }
    ends_.push_back({now_ + j.request.time_limit, plan_.starts.size()});
    StartDecision s;
    s.job = j.id;
    s.allocation = std::move(alloc);
    s.backfilled = reservation_.has_value();
    s.after_preemption = after_preemption;
    s.detail = std::move(detail);
    if (s.backfilled) ++plan_.stats.backfilled;
    plan_.starts.push_back(std::move(s));
    ++plan_.stats.started;
  }

  // EASY backfill: the earliest time the running jobs' time limits free room
  // for `req`, and where it would run then.
  void Reserve(const Request& req, PendingDecision& d) {
    WorkingState shadow = now_state_;
    std::vector<TimedRelease> releases;
    for (size_t k = 0; k < snap_.running.size(); ++k) {
      const JobInfo& r = snap_.running[k];
      if (preempted_[k] || r.allocation == nullptr) continue;
      releases.push_back({std::max(r.expected_end, now_), r.allocation});
    }
    for (const auto& [at, index] : ends_)
      releases.push_back({at, &plan_.starts[index].allocation});
    auto found = EarliestFit(shadow, std::move(releases), eligibility_.Eligible(req), req,
                             [&](const WorkingState& s) {
                               PlaceContext ctx = Ctx();
                               return Place(s, req, ctx);
                             });
    if (!found) return;  // even an empty cluster would not do: nodes are down
    const Time at = found->first;
    SHOAL_CHECK(shadow.Allocate(found->second), "reservation outside the inventory");
    d.estimated_start = at;
    for (const NodeAllocation& na : found->second.nodes)
      d.planned_nodes.push_back(na.node);
    reservation_ = Reservation{at, d.job};
    long_ok_ = WorkingState::Min(now_state_, shadow);
    shadow_ = std::move(shadow);
    long_memo_.Clear();
  }

  // Running jobs that may ever be preempted, worst ranked first.
  void RankVictims() {
    victims_ranked_ = true;
    const int parts = static_cast<int>(inv_.partitions().size());
    running_ranks_.reserve(snap_.running.size());
    for (size_t k = 0; k < snap_.running.size(); ++k) {
      const JobInfo& r = snap_.running[k];
      const int tier =
          inv_.partitions()[static_cast<size_t>(std::clamp(r.request.partition, 0, parts - 1))]
              .priority_tier;
      running_ranks_.push_back({tier, policy_.sort().Value(sort_ctx_, r)});
      if (r.allocation == nullptr || !r.preemptible) continue;
      if (now_ - r.start < params_.min_run_before_preempt) continue;
      victims_.push_back(k);
    }
    std::sort(victims_.begin(), victims_.end(), [&](size_t a, size_t b) {
      const JobRank& ra = running_ranks_[a];
      const JobRank& rb = running_ranks_[b];
      if (ra.tier != rb.tier) return ra.tier < rb.tier;
      if (ra.value != rb.value) return ra.value > rb.value;
      const JobInfo& ja = snap_.running[a];
      const JobInfo& jb = snap_.running[b];
      if (ja.start != jb.start) return ja.start > jb.start;
      return ja.id > jb.id;
    });
  }

  // With power budgets, the victims' draw leaves them: whether `alloc` then
  // fits. When it does, the job is charged (victims not needed after all
  // come back only where the budgets still allow); when not, nothing changed.
  bool PowerAfterPreemption(const JobInfo& j, const std::vector<size_t>& released,
                            const Allocation& alloc) {
    if (!power_.active()) return true;
    for (size_t k : released)
      power_.Charge(snap_.running[k].id, *snap_.running[k].allocation, snap_.running[k].gpu_power_w,
                    -1);
    if (power_.Crossed(alloc, j.gpu_power_w) < 0) {
      power_.Charge(j.id, alloc, j.gpu_power_w, 1);
      return true;
    }
    for (size_t k : released) {
      const JobInfo& v = snap_.running[k];
      power_.Charge(v.id, *v.allocation, v.gpu_power_w, 1, std::max(v.expected_end, now_));
    }
    return false;
  }

  // Whether `e` or a job ranked after it might still preempt in this pass:
  // TryPreempt's limits are not reached, and, with a monotone plugin, the
  // worst-ranked running job left is one `e` may preempt (a plugin that
  // refuses a victim to a job refuses it to every job ranked after that one).
  bool MayStillPreempt(const Ranked& e) {
    if (reservation_ || preemptions_ >= params_.max_preemptions_per_pass) return false;
    if (preempt_attempts_ >= 4 * params_.max_preemptions_per_pass) return false;
    if (!policy_.preempt()->Monotone()) return true;
    if (!victims_ranked_) RankVictims();
    for (size_t k : victims_) {
      if (preempted_[k]) continue;
      return policy_.preempt()->MayPreempt(snap_, snap_.pending[e.index], e.rank, snap_.running[k],
                                           running_ranks_[k]);
    }
    return false;
  }

  // Frees lower-ranked running jobs, worst first, until `e` fits; keeps only
  // the victims whose resources the placement needs.
  bool TryPreempt(const Entry& e) {
    if (reservation_ || preemptions_ >= params_.max_preemptions_per_pass) return false;
    if (preempt_attempts_ >= 4 * params_.max_preemptions_per_pass) return false;
    const JobInfo& j = snap_.pending[e.index];
    const Request& req = *e.req;
    // A shape that could not make room before cannot now: later jobs rank
    // lower and so have no more victims.
    if (preempt_failed_.Find(req, e.Key()) != nullptr) return false;
    if (!victims_ranked_) RankVictims();
    ++preempt_attempts_;
    ReleaseCounter counter(now_state_, eligibility_.Eligible(req), req);
    std::vector<size_t> released;
    std::optional<Allocation> alloc;
    for (size_t k : victims_) {
      if (preempted_[k]) continue;
      const JobInfo& v = snap_.running[k];
      if (!policy_.preempt()->MayPreempt(snap_, j, e.rank, v, running_ranks_[k])) {
        if (policy_.preempt()->Monotone()) break;
        continue;
      }
      counter.Release(v.allocation);
      released.push_back(k);
      if (!counter.MayFit()) continue;
      PlaceContext ctx = Ctx();
      alloc = Place(now_state_, req, ctx);
      if (alloc) break;
    }
    if (alloc && !PowerAfterPreemption(j, released, *alloc)) alloc.reset();
    if (!alloc) {
      for (size_t k : released)
        now_state_.Allocate(*snap_.running[k].allocation);
      preempt_failed_.Put(req, e.Key(), true);
      return false;
    }
    now_state_.Allocate(*alloc);
    for (auto it = released.rbegin(); it != released.rend(); ++it) {
      const JobInfo& v = snap_.running[*it];
      if (now_state_.CanAllocate(*v.allocation).ok() &&
          power_.Crossed(*v.allocation, v.gpu_power_w) < 0) {
        now_state_.Allocate(*v.allocation);  // not needed after all
        power_.Charge(v.id, *v.allocation, v.gpu_power_w, 1, std::max(v.expected_end, now_));
        continue;
      }
      preempted_[*it] = true;
      ++preemptions_;
      ++plan_.stats.preempted;
      ChargeAccount(v, -v.allocation->TotalGpus(), -1);
      plan_.preemptions.push_back({v.id, j.id});
    }
    if (!held_) {  // what stays held until the victims stop: they do, the preemptor does not
      held_.emplace(now_state_);
      held_->Release(*alloc);
      for (size_t k : released) {
        if (preempted_[k]) held_->Allocate(*snap_.running[k].allocation);
      }
    }
    power_.Charge(j.id, *alloc, j.gpu_power_w, -1);  // Commit charges it
    now_memo_.Clear();
    power_blocked_.clear();
    Commit(j, std::move(*alloc), false, /*after_preemption=*/true);
    return true;
  }

  const Snapshot& snap_;
  const Inventory& inv_;
  const Time now_;
  const Policy& policy_;
  const PolicyParams& params_;
  WorkingState now_state_;
  PowerLedger power_;
  EligibilityCache eligibility_;
  Rng rng_;
  SortContext sort_ctx_;
  std::unique_ptr<ScorePass> pass_;
  Plan plan_;
  std::deque<Request> recompiled_;
  ShapeMemo<Status> satisfiable_;
  ShapeMemo<std::pair<PendingReason, std::string>> classified_;
  ShapeMemo<bool> now_memo_;
  ShapeMemo<bool> long_memo_;
  std::vector<int> account_gpus_;
  struct QosUse {
    int gpus = 0;
    int jobs = 0;
  };
  std::map<std::pair<int, std::string_view>, QosUse> qos_use_;  // by (QoS, user)
  struct ReservedKey {
    const NodeBitset* allowed;
    int reservation;
    uint64_t off;
    auto operator<=>(const ReservedKey&) const = default;
  };
  std::map<ReservedKey, std::shared_ptr<const NodeBitset>> reserved_masks_;
  ShapeMemo<bool> base_memo_;
  std::unordered_map<uint32_t, Entry> prescreened_;  // screened by Rank(): requests recompiled
  std::map<double, ShapeMemo<PendingDecision>> power_blocked_;  // by the job's draw per GPU
  std::unordered_map<uint64_t, int> array_running_;
  std::vector<bool> preempted_;
  std::vector<JobRank> running_ranks_;
  std::vector<size_t> victims_;
  bool victims_ranked_ = false;
  int preempt_attempts_ = 0;
  ShapeMemo<bool> preempt_failed_;
  std::vector<std::pair<Time, size_t>>
      ends_;  // started this pass: expected end, index in plan_.starts
  uint64_t blocked_partition_ = 0;
  std::vector<Ranked> order_;        // the pending jobs in the order the walk takes them (Rank)
  std::vector<uint8_t> known_;       // by place in order_, when taken on trust: whether ranked yet
  std::optional<OrderTails> tails_;  // where the order's jobs lie, for NextToWalk
  size_t open_class_ = ~size_t{0};   // in tails_->Classes(): the last class found open
  int preemptions_ = 0;
  std::optional<Reservation> reservation_;
  std::optional<WorkingState> shadow_;
  std::optional<WorkingState> long_ok_;
  // After a preemption: the running jobs, victims included, and the starts
  // that need none of what victims hold (StartDecision::after_preemption).
  std::optional<WorkingState> held_;
  std::optional<ModelTimeline> timeline_;  // speed-aware policies only
};

// Plan::wake_at: when the first job running after `plan` reaches the
// attained service at which its class changes, at the GPUs it holds. Under
// preemption by class, only a change to a class above the best waiting job's
// can let that job displace it.
Time WakeAt(const Snapshot& snapshot, Time now, const Policy& policy, const Plan& plan) {
  if (policy.preempt() == nullptr || !policy.sort().ChangesAsItRuns()) return kTimeNever;
  if (snapshot.pending.size() + plan.preemptions.size() == plan.starts.size()) return kTimeNever;
  const SortPlugin& sort = policy.sort();
  std::unordered_set<uint64_t> victims;
  for (const PreemptDecision& p : plan.preemptions)
    victims.insert(p.victim.value());
  std::unordered_map<uint64_t, const Allocation*> started;
  for (const StartDecision& s : plan.starts)
    started[s.job.value()] = &s.allocation;
  double above = -std::numeric_limits<double>::infinity();
  if (policy.preempt()->ByClass()) {
    const SortContext ctx = SortContextOf(snapshot, now, policy.params());
    above = std::numeric_limits<double>::infinity();
    for (const JobInfo& j : snapshot.pending) {
      if (!started.count(j.id.value())) above = std::min(above, std::floor(sort.Value(ctx, j)));
    }
    for (const JobInfo& r : snapshot.running) {
      if (victims.count(r.id.value())) above = std::min(above, std::floor(sort.Value(ctx, r)));
    }
  }
  Time next = kTimeNever;
  auto consider = [&](double attained_gpu_s, double gpu_eq) {
    const double at = sort.NextChangeAt(snapshot, policy.params(), attained_gpu_s, above);
    if (!std::isfinite(at)) return;
    // Up to the whole millisecond at or after it, then one more: service
    // accrued in other steps (a server's ticks) differs in its last bits, and
    // must land on the same side of a millisecond (at a LAS threshold and an
    // even GPU count the time is often a half millisecond exactly).
    const double ms = (at - attained_gpu_s) / std::max(1e-9, gpu_eq) * 1000;
    const Duration to(static_cast<int64_t>(std::ceil(ms - 1e-6)));
    next = std::min(next, now + to + Duration(1));
  };
  for (const JobInfo& r : snapshot.running) {
    if (r.allocation != nullptr && !victims.count(r.id.value()))
      consider(r.attained_gpu_s, r.allocation->GpuEquivalents());
  }
  if (plan.starts.empty()) return next;
  for (const JobInfo& j : snapshot.pending) {
    if (auto it = started.find(j.id.value()); it != started.end())
      consider(j.attained_gpu_s, it->second->GpuEquivalents());
  }
  return next;
}

}  // namespace

Plan Schedule(const Snapshot& snapshot, Time now, const Policy& policy) {
  SHOAL_CHECK(snapshot.inventory != nullptr, "a snapshot needs an inventory");
  Cycle cycle(snapshot, now, policy);
  Plan plan = cycle.Run();
  plan.wake_at = WakeAt(snapshot, now, policy, plan);
  return plan;
}

Result<StartEstimate> EstimateStart(const Snapshot& snapshot, const Request& req, Time not_before,
                                    const Policy& policy, double gpu_power_w) {
  SHOAL_CHECK(snapshot.inventory != nullptr, "a snapshot needs an inventory");
  const Inventory& inv = *snapshot.inventory;
  if (req.inventory_version != inv.version())
    return InvalidArgument("the request was compiled for another cluster layout");
  SHOAL_RETURN_IF_ERROR(CheckSatisfiable(inv, req));
  const Partition& part = inv.partitions()[static_cast<size_t>(req.partition)];
  if (!part.up) return FailedPrecondition(fmt::format("partition '{}' is down", part.name));
  WorkingState state(inv, snapshot.nodes);
  // The moment itself, then each running job's expected end after it.
  std::vector<TimedRelease> releases = {{not_before, nullptr}};
  for (const JobInfo& r : snapshot.running) {
    if (r.allocation == nullptr || !state.Allocate(*r.allocation)) continue;
    releases.push_back({std::max(r.expected_end, not_before), r.allocation});
  }
  const PolicyParams& params = policy.params();
  EligibilityCache eligibility(inv, &policy.filters());
  Rng rng(params.seed ^ static_cast<uint64_t>(not_before.time_since_epoch().count()));
  PassStats stats;
  std::unique_ptr<ScorePass> pass = policy.score().BeginPass(snapshot, params);
  auto found = EarliestFit(
      state, std::move(releases), eligibility.Eligible(req), req, [&](const WorkingState& s) {
        PlaceContext ctx{policy.score(), pass.get(), rng, params, eligibility, stats};
        return Place(s, req, ctx);
      });
  if (!found) {
    return FailedPrecondition(
        fmt::format("it cannot start even when every running job has ended: {}",
                    CheckCapacity(inv, req, snapshot.nodes).message()));
  }
  SHOAL_ASSIGN_OR_RETURN(Time start,
                         PowerStart(snapshot, found->second, gpu_power_w, found->first));
  return StartEstimate{start, std::move(found->second)};
}

}  // namespace shoal::sched
