// A controller taking over from its store, as `shoal server` does at start:
// the state the store loaded, and the histories its policy learns from.
#pragma once

#include "core/status.h"
#include "core/time.h"
#include "server/controller.h"
#include "state/store.h"

namespace shoal::server {

// Loads `store` (finished jobs back to the controller's dependency horizon),
// hands it to `c` (Controller::Restore), and seeds the service history
// (gittins: the last completed jobs) and the power history (power budgets:
// the last finished jobs). Returns what was loaded, for the caller's own
// use (the change log).
Result<state::Loaded> RestoreFromStore(Controller& c, state::Store& store, Time now);

}  // namespace shoal::server
