// The Controller's QoS and admin reservations: what admins change, what a
// submit is checked against, and what the scheduler's snapshot carries of them.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/strings.h"
#include "server/controller.h"
#include "server/controller_internal.h"

namespace shoal::server {

namespace {

using internal::Denied;
using internal::IsActive;

template <typename T>
auto FindNamed(std::vector<T>& items, std::string_view name) {
  return std::find_if(items.begin(), items.end(), [&](const T& x) { return x.name == name; });
}

template <typename T>
auto FindNamed(const std::vector<T>& items, std::string_view name) {
  return std::find_if(items.begin(), items.end(), [&](const T& x) { return x.name == name; });
}

template <typename T>
std::string NameList(const std::vector<T>& items) {
  std::vector<std::string> names;
  for (const T& x : items)
    names.push_back(x.name);
  return shoal::Join(names, ", ");
}

}  // namespace

// ---------------------------------------------------------------- QoS

Status Controller::PutQos(const Identity& who, Qos q) {
  if (!who.admin()) return Denied("only admins change QoS");
  if (!IsValidNodeName(q.name)) {
    return InvalidArgument(
        fmt::format("QoS name '{}': 1 to 64 letters, digits, '.', '_' and '-'", q.name));
  }
  auto it = FindNamed(qos_, q.name);
  if (it == qos_.end() && qos_.size() >= kMaxQos)
    return FailedPrecondition(fmt::format("the cluster has {} QoS, the most it may", kMaxQos));
  for (const std::string& victim : q.preempt) {
    if (victim != q.name && FindNamed(qos_, victim) == qos_.end())
      return InvalidArgument(
          fmt::format("QoS '{}' may preempt '{}', which does not exist (known: {})", q.name, victim,
                      NameList(qos_)));
  }
  if (q.is_default) {
    for (Qos& other : qos_) {
      if (other.is_default && other.name != q.name) {
        other.is_default = false;
        batch_.qos.push_back(other);
      }
    }
  }
  if (it == qos_.end()) {
    qos_.push_back(q);
  } else {
    *it = q;
  }
  batch_.qos.push_back(q);
  dirty_ = true;
  return Status::Ok();
}

Status Controller::DeleteQos(const Identity& who, const std::string& name) {
  if (!who.admin()) return Denied("only admins delete QoS");
  auto it = FindNamed(qos_, name);
  if (it == qos_.end()) return NotFound(fmt::format("no QoS '{}'", name));
  for (const auto& [id, job] : jobs_) {
    if (IsActive(job->state) && job->spec.qos == name) {
      return FailedPrecondition(
          fmt::format("job {} ({}) uses QoS '{}': cancel it or let it end first", id,
                      JobStateName(job->state), name));
    }
  }
  for (const Qos& other : qos_) {
    if (other.name != name &&
        std::find(other.preempt.begin(), other.preempt.end(), name) != other.preempt.end()) {
      return FailedPrecondition(
          fmt::format("QoS '{}' preempts '{}': change it first", other.name, name));
    }
  }
  qos_.erase(it);
  batch_.deleted_qos.push_back(name);
  dirty_ = true;
  return Status::Ok();
}

api::Json Controller::QosJson() const {
  api::Json out = api::Json::array();
  for (const Qos& q : qos_)
    out.push_back(api::ToJson(q));
  return out;
}

// ---------------------------------------------------------------- reservations

Result<std::vector<std::string>> Controller::ChooseReservationNodes(
    const ReservationRequest& request) const {
  const Reservation& r = request.reservation;
  std::set<std::string> taken;  // by reservations at the same time
  for (const Reservation& other : reservations_) {
    if (other.Overlaps(r.start, r.end)) taken.insert(other.nodes.begin(), other.nodes.end());
  }
  if (!r.nodes.empty()) {
    for (const std::string& name : r.nodes) {
      if (!nodes_.count(name)) return NotFound(fmt::format("no node '{}'", name));
      for (const Reservation& other : reservations_) {
        if (other.Overlaps(r.start, r.end) &&
            std::find(other.nodes.begin(), other.nodes.end(), name) != other.nodes.end()) {
          return FailedPrecondition(fmt::format("node '{}' is in reservation '{}' from {} to {}",
                                                name, other.name, FormatTime(other.start),
                                                FormatTime(other.end)));
        }
      }
    }
    return r.nodes;
  }
  // Counted: idle nodes first, then (for GPUs) the most GPUs first, then by name.
  const JobsByNode busy = RunningByNode(std::nullopt);
  struct Candidate {
    bool busy;
    int gpus;
    std::string name;
  };
  std::vector<Candidate> candidates;
  for (const auto& [name, n] : nodes_) {
    const NodeState st = EffectiveState(n);
    if (st == NodeState::kDown || st == NodeState::kDrained || taken.count(name)) continue;
    if (!request.partition.empty() && std::find(n.node.partitions.begin(), n.node.partitions.end(),
                                                request.partition) == n.node.partitions.end()) {
      continue;
    }
    candidates.push_back({busy.count(n.node.id.value()) > 0, n.node.GpuCount(), name});
  }
  std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.busy != b.busy) return !a.busy;
    if (request.gpu_count > 0 && a.gpus != b.gpus) return a.gpus > b.gpus;
    return a.name < b.name;
  });
  std::vector<std::string> chosen;
  int gpus = 0;
  for (const Candidate& c : candidates) {
    if (request.gpu_count > 0 ? gpus >= request.gpu_count
                              : static_cast<int>(chosen.size()) >= request.node_count)
      break;
    if (request.gpu_count > 0 && c.gpus == 0) continue;
    chosen.push_back(c.name);
    gpus += c.gpus;
  }
  const bool enough = request.gpu_count > 0 ? gpus >= request.gpu_count
                                            : static_cast<int>(chosen.size()) >= request.node_count;
  if (!enough) {
    return FailedPrecondition(fmt::format(
        "only {} nodes with {} GPUs are up{} and free of other reservations from {} to {}; "
        "asked for {}",
        chosen.size(), gpus,
        request.partition.empty() ? "" : fmt::format(" in partition '{}'", request.partition),
        FormatTime(r.start), FormatTime(r.end),
        request.gpu_count > 0 ? fmt::format("{} GPUs", request.gpu_count)
                              : fmt::format("{} nodes", request.node_count)));
  }
  return chosen;
}

Result<api::Json> Controller::CreateReservation(const Identity& who, ReservationRequest request,
                                                Time now) {
  if (!who.admin()) return Denied("only admins make reservations");
  Reservation& r = request.reservation;
  if (!IsValidNodeName(r.name)) {
    return InvalidArgument(
        fmt::format("reservation name '{}': 1 to 64 letters, digits, '.', '_' and '-'", r.name));
  }
  if (FindNamed(reservations_, r.name) != reservations_.end())
    return Status(StatusCode::kAlreadyExists, fmt::format("reservation '{}' exists", r.name));
  if (reservations_.size() >= kMaxReservations) {
    return FailedPrecondition(
        fmt::format("the cluster has {} reservations, the most it may", kMaxReservations));
  }
  r.start = std::max(r.start, now);
  if (request.duration.count() > 0) r.end = r.start + request.duration;
  if (r.end <= r.start) return InvalidArgument("a reservation must end after it starts (and now)");
  if (r.users.empty() && r.accounts.empty() && !r.maintenance) {
    return InvalidArgument(
        "a reservation needs users or accounts (or is for maintenance), as Slurm's does");
  }
  const int ways = (r.nodes.empty() ? 0 : 1) + (request.node_count > 0 ? 1 : 0) +
                   (request.gpu_count > 0 ? 1 : 0);
  if (ways != 1) return InvalidArgument("a reservation names its nodes, or a node or GPU count");
  if (!request.partition.empty() && FindNamed(partitions_, request.partition) == partitions_.end())
    return InvalidArgument(fmt::format("unknown partition '{}'", request.partition));
  SHOAL_ASSIGN_OR_RETURN(r.nodes, ChooseReservationNodes(request));
  std::sort(r.nodes.begin(), r.nodes.end());
  // Jobs that run on its nodes now keep running; say which, so that an
  // admin planning maintenance knows what is still there.
  const JobsByNode by_node = RunningByNode(std::nullopt);
  std::set<uint64_t> running_there;
  for (const std::string& name : r.nodes) {
    auto it = by_node.find(nodes_.at(name).node.id.value());
    if (it == by_node.end()) continue;
    for (const auto& [job, na] : it->second)
      running_there.insert(job->id.value());
  }
  reservations_.push_back(r);
  batch_.reservations.push_back(r);
  dirty_ = true;
  api::Json reply = api::ToJson(r);
  reply["running_jobs"] = running_there;
  return reply;
}

Status Controller::DeleteReservation(const Identity& who, const std::string& name) {
  if (!who.admin()) return Denied("only admins delete reservations");
  auto it = FindNamed(reservations_, name);
  if (it == reservations_.end()) return NotFound(fmt::format("no reservation '{}'", name));
  reservations_.erase(it);
  batch_.deleted_reservations.push_back(name);
  dirty_ = true;
  return Status::Ok();
}

api::Json Controller::ReservationsJson(Time now) const {
  api::Json out = api::Json::array();
  for (const Reservation& r : reservations_) {
    api::Json j = api::ToJson(r);
    j["state"] = now >= r.start ? "active" : "planned";
    int gpus = 0;
    for (const std::string& name : r.nodes) {
      if (auto it = nodes_.find(name); it != nodes_.end()) gpus += it->second.node.GpuCount();
    }
    j["gpus"] = gpus;
    out.push_back(std::move(j));
  }
  return out;
}

void Controller::TickReservations(Time now) {
  const Time last = last_reservation_tick_;
  last_reservation_tick_ = now;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if ((last < it->start && it->start <= now) || (last < it->end && it->end <= now)) dirty_ = true;
    if (it->end <= now) {
      batch_.deleted_reservations.push_back(it->name);
      it = reservations_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---------------------------------------------------------------- submit and passes

Status Controller::CheckQosAndReservation(const Identity& who, JobSpec& spec, Time now) const {
  if (!qos_.empty()) {
    if (spec.qos.empty()) {
      auto d = std::find_if(qos_.begin(), qos_.end(), [](const Qos& q) { return q.is_default; });
      if (d != qos_.end()) spec.qos = d->name;
    } else if (FindNamed(qos_, spec.qos) == qos_.end()) {
      return InvalidArgument(
          fmt::format("unknown QoS '{}' (the cluster's: {})", spec.qos, NameList(qos_)));
    }
  }
  if (spec.reservation.empty()) return Status::Ok();
  auto r = FindNamed(reservations_, spec.reservation);
  if (r == reservations_.end())
    return InvalidArgument(fmt::format("no reservation '{}'", spec.reservation));
  if (now >= r->end) return InvalidArgument(fmt::format("reservation '{}' has ended", r->name));
  if (!who.admin() && !r->Allows(spec.user, spec.account)) {
    return Denied(
        fmt::format("reservation '{}' is for users {} and accounts {}: not for user '{}'{}",
                    r->name, r->users.empty() ? "(none)" : shoal::Join(r->users, ","),
                    r->accounts.empty() ? "(none)" : shoal::Join(r->accounts, ","), spec.user,
                    spec.account.empty() ? "" : " of account '" + spec.account + "'"));
  }
  return Status::Ok();
}

void Controller::AddQosAndReservations(sched::Snapshot& snap) const {
  for (const Qos& q : qos_) {
    sched::QosInfo info;
    info.name = q.name;
    info.max_gpus_per_job = q.max_gpus_per_job;
    info.max_gpus_per_user = q.max_gpus_per_user;
    info.max_jobs_per_user = q.max_jobs_per_user;
    info.max_time = q.max_time;
    for (const std::string& victim : q.preempt) {
      auto v = FindNamed(qos_, victim);
      if (v != qos_.end()) info.preempts |= uint64_t{1} << (v - qos_.begin());
    }
    snap.qos.push_back(std::move(info));
  }
  for (const Reservation& r : reservations_) {
    sched::ReservationInfo info;
    info.name = r.name;
    info.start = r.start;
    info.end = r.end;
    info.nodes = sched::NodeBitset(inventory_->size());
    for (const std::string& name : r.nodes) {
      if (auto idx = inventory_->IndexOfName(name)) info.nodes.Set(*idx);
    }
    snap.reservations.push_back(std::move(info));
  }
}

void Controller::SetQosAndReservation(const Job& job, const sched::Snapshot& snap,
                                      sched::JobInfo& info) const {
  if (!job.spec.qos.empty()) {
    int top = 0;
    for (const Qos& q : qos_)
      top = std::max(top, q.priority);
    auto q = FindNamed(qos_, job.spec.qos);
    if (q != qos_.end()) {
      info.qos = static_cast<int>(q - qos_.begin());
      info.qos_factor = top > 0 ? static_cast<double>(q->priority) / top : 0.0;
    }
  }
  if (!job.spec.reservation.empty()) {
    auto r = std::find_if(
        snap.reservations.begin(), snap.reservations.end(),
        [&](const sched::ReservationInfo& x) { return x.name == job.spec.reservation; });
    if (r == snap.reservations.end()) {
      info.reservation_gone = true;
    } else {
      info.reservation = static_cast<int>(r - snap.reservations.begin());
    }
  }
}

}  // namespace shoal::server
