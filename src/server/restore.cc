#include "server/restore.h"

namespace shoal::server {

Result<state::Loaded> RestoreFromStore(Controller& c, state::Store& store, Time now) {
  SHOAL_ASSIGN_OR_RETURN(state::Loaded loaded, store.Load(now - c.config().dependency_horizon));
  SHOAL_RETURN_IF_ERROR(c.Restore(loaded, now));
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
