#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "state/records.h"
#include "state/store.h"

namespace shoal::state {

namespace {

// The store of NewMemoryStore: maps by key under one mutex. It checks batches
// with the SQLite store's rules (records.h) and answers with the same order
// and limits, so a controller tested against it meets no surprise on disk.
// Thread safety: every method may be called from any thread.
class MemoryStore final : public Store {
 public:
  Status Commit(const Batch& batch) override {
    if (batch.empty()) return Status::Ok();
    // Checked whole before the first change, so a refused batch changes nothing.
    SHOAL_RETURN_IF_ERROR(EncodeBatch(batch).status());
    std::lock_guard lock(mu_);
    for (const std::string& name : batch.deleted_nodes)
      nodes_.erase(name);
    for (const std::string& name : batch.deleted_partitions)
      partitions_.erase(name);
    for (const std::string& name : batch.deleted_accounts)
      accounts_.erase(name);
    for (const std::string& name : batch.deleted_qos)
      qos_.erase(name);
    for (const std::string& name : batch.deleted_reservations)
      reservations_.erase(name);
    for (const auto& [user, name] : batch.deleted_speeds) {
      auto it = speeds_.lower_bound({user, name, ""});
      while (it != speeds_.end() && std::get<0>(it->first) == user &&
             std::get<1>(it->first) == name)
        it = speeds_.erase(it);
    }
    for (const Job& job : batch.jobs)
      jobs_[job.id.value()] = job;
    for (const Node& node : batch.nodes)
      nodes_[node.name] = node;
    for (const TokenRecord& token : batch.tokens)
      tokens_[token.id] = token;
    for (const Partition& p : batch.partitions)
      partitions_[p.name] = p;
    for (const Account& a : batch.accounts)
      accounts_[a.name] = a;
    for (const Qos& q : batch.qos)
      qos_[q.name] = q;
    for (const Reservation& r : batch.reservations)
      reservations_[r.name] = r;
    for (const AccountUsage& u : batch.usage)
      usage_[u.account] = u;
    for (const LearnedSpeed& sp : batch.speeds)
      speeds_[{sp.user, sp.name, sp.model}] = sp;
    if (batch.next_job_id) next_job_id_ = *batch.next_job_id;
    return Status::Ok();
  }

  Result<Loaded> Load(Time finished_horizon) override {
    std::lock_guard lock(mu_);
    Loaded loaded;
    for (const auto& [id, job] : jobs_) {
      if (!IsTerminal(job.state)) {
        loaded.active_jobs.push_back(job);
      } else if (job.end_time >= finished_horizon) {
        loaded.finished.emplace_back(job.id, job.state);
      }
    }
    for (const auto& [name, node] : nodes_)
      loaded.nodes.push_back(node);
    for (const auto& [id, token] : tokens_)
      loaded.tokens.push_back(token);
    for (const auto& [name, p] : partitions_)
      loaded.partitions.push_back(p);
    for (const auto& [name, a] : accounts_)
      loaded.accounts.push_back(a);
    for (const auto& [name, q] : qos_)
      loaded.qos.push_back(q);
    for (const auto& [name, r] : reservations_)
      loaded.reservations.push_back(r);
    for (const auto& [account, u] : usage_)
      loaded.usage.push_back(u);
    for (const auto& [key, sp] : speeds_)
      loaded.speeds.push_back(sp);
    loaded.next_job_id = next_job_id_;
    if (!jobs_.empty())
      loaded.next_job_id = std::max(loaded.next_job_id, jobs_.rbegin()->first + 1);
    return loaded;
  }

  Result<std::vector<Job>> History(const HistoryQuery& query) override {
    SHOAL_ASSIGN_OR_RETURN(const int limit, HistoryLimit(query));
    std::vector<const Job*> matches;
    std::lock_guard lock(mu_);
    for (const auto& [id, job] : jobs_) {
      if (MatchesHistory(job, query)) matches.push_back(&job);
    }
    auto newer = [](const Job* a, const Job* b) {
      return a->end_time != b->end_time ? a->end_time > b->end_time : a->id > b->id;
    };
    auto lower_id = [](const Job* a, const Job* b) { return a->id < b->id; };
    const size_t n = std::min(matches.size(), static_cast<size_t>(limit));
    auto first_n = matches.begin() + static_cast<std::ptrdiff_t>(n);
    if (query.by_id) {
      std::partial_sort(matches.begin(), first_n, matches.end(), lower_id);
    } else {
      std::partial_sort(matches.begin(), first_n, matches.end(), newer);
    }
    std::vector<Job> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
      out.push_back(*matches[i]);
    return out;
  }

  Result<std::optional<Job>> FindJob(JobId id) override {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(id.value());
    if (it == jobs_.end()) return std::optional<Job>();
    return std::optional<Job>(it->second);
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, Job> jobs_;
  std::map<std::string, Node> nodes_;
  std::map<std::string, TokenRecord> tokens_;
  std::map<std::string, Partition> partitions_;
  std::map<std::string, Account> accounts_;
  std::map<std::string, Qos> qos_;
  std::map<std::string, Reservation> reservations_;
  std::map<std::string, AccountUsage> usage_;
  std::map<std::tuple<std::string, std::string, std::string>, LearnedSpeed> speeds_;
  uint64_t next_job_id_ = 1;
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() {
  return std::make_unique<MemoryStore>();
}

}  // namespace shoal::state
