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

// The reasons of the drains that acceptance results lift or set; other
// drains are an admin's or a sick GPU's and only `resume` lifts them.
inline constexpr std::string_view kAwaitingAcceptance = "awaiting acceptance";
inline constexpr std::string_view kAcceptanceFailed = "acceptance failed: ";

}  // namespace shoal::server::internal
