#include "state/store.h"

namespace shoal::state {

bool Batch::empty() const {
  return jobs.empty() && nodes.empty() && deleted_nodes.empty() && tokens.empty() &&
         partitions.empty() && deleted_partitions.empty() && accounts.empty() &&
         deleted_accounts.empty() && qos.empty() && deleted_qos.empty() && reservations.empty() &&
         deleted_reservations.empty() && usage.empty() && speeds.empty() &&
         deleted_speeds.empty() && !next_job_id.has_value();
}

}  // namespace shoal::state
