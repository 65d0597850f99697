#include "server/restore.h"

#include <algorithm>
#include <vector>

namespace shoal::server {

Result<state::Loaded> RestoreFromStore(Controller& c, state::Store& store, Time now) {
  SHOAL_ASSIGN_OR_RETURN(state::Loaded loaded, store.Load(now - c.config().dependency_horizon));
  // Fair-share usage is committed once a minute: the jobs that ended since
  // the oldest account figure bring it up to their ends.
  std::vector<Job> ended_since;
  if (!loaded.usage.empty()) {
    state::HistoryQuery q;
    q.since = loaded.usage.front().updated;
    for (const state::AccountUsage& u : loaded.usage)
      q.since = std::min(q.since, u.updated);
    q.limit = state::kMaxHistoryLimit;
    SHOAL_ASSIGN_OR_RETURN(ended_since, store.History(q));
  }
  SHOAL_RETURN_IF_ERROR(c.Restore(loaded, now, ended_since));
  if (c.UsesServiceHistory()) {
    state::HistoryQuery completed;
    completed.states = {JobState::kCompleted};
    completed.limit = static_cast<int>(sched::ServiceHistory::kWindow);
    SHOAL_ASSIGN_OR_RETURN(std::vector<Job> past, store.History(completed));
    c.SeedServiceHistory(past);
  }
  if (c.UsesPowerHistory()) {
    state::HistoryQuery finished;
    finished.states = {JobState::kCompleted, JobState::kFailed, JobState::kTimeout,
                       JobState::kCancelled};
    finished.limit = 2000;
    SHOAL_ASSIGN_OR_RETURN(std::vector<Job> past, store.History(finished));
    c.SeedPowerHistory(past);
  }
  return loaded;
}

}  // namespace shoal::server
