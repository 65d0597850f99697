// GPU health from telemetry. A GPU is unhealthy when it reports a new XID
// error or new uncorrectable ECC errors since the last round (held for
// `hold`, so that one report reaches the server even if the condition is
// brief), or while its temperature is at or above its slowdown limit. The
// server drains a node whose GPU turns unhealthy until an admin resumes it.
//
// Pure and single-threaded: the agent's loop calls Judge with each round of
// samples.
#pragma once

#include <string>
#include <vector>

#include "agent/gpu/provider.h"
#include "core/time.h"

namespace shoal::agent {

struct GpuHealth {
  bool healthy = true;
  std::string reason;  // empty when healthy
};

struct HealthOptions {
  double default_temperature_limit_c = 90;  // when the device reports none
  Duration hold = std::chrono::seconds(60);
};

class HealthMonitor {
 public:
  HealthMonitor(std::vector<GpuDevice> devices, HealthOptions options = {});

  // One verdict per device, in device order. The first round only records
  // the counters (errors from before the agent started are not news).
  std::vector<GpuHealth> Judge(const std::vector<GpuSample>& samples, Time now);

 private:
  struct State {
    bool seen = false;
    uint64_t xid_errors = 0;
    uint64_t ecc_uncorrected = 0;
    Time unhealthy_until{};
    std::string held_reason;
  };
  std::vector<GpuDevice> devices_;
  HealthOptions options_;
  std::vector<State> state_;
};

}  // namespace shoal::agent
