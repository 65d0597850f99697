// Small pieces shared by the files of the Controller (controller.cc and
// controller_*.cc); not for other users.
#pragma once

#include <string>
#include <string_view>

#include "core/job.h"
#include "core/status.h"

namespace shoal::server::internal {

inline Status Denied(std::string why) {
  return Status(StatusCode::kPermissionDenied, std::move(why));
}

inline bool IsActive(JobState s) {
  return s == JobState::kPending || s == JobState::kRunning;
}

// The PortBook key of a job's step (0: the job's own).
inline uint64_t PortKey(JobId id, uint32_t step) {
  return id.value() << 24 | (step & 0xffffff);
}

// How many consecutive ports a job's own step holds: MASTER_PORT and one
// per task after it (TF_CONFIG's workers).
inline int PortsFor(const JobSpec& spec, size_t nodes) {
  return (spec.tasks > 0 ? spec.tasks : static_cast<int>(nodes)) + 1;
}

// The reasons of the drains that acceptance results lift or set; other
// drains are an admin's or a sick GPU's and only `resume` lifts them.
inline constexpr std::string_view kAwaitingAcceptance = "awaiting acceptance";
inline constexpr std::string_view kAcceptanceFailed = "acceptance failed: ";

}  // namespace shoal::server::internal
