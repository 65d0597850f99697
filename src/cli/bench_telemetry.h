// Burn-in telemetry for `shoal bench node` from the agent's GPU provider
// (NVML by dlopen, agent/gpu/provider.h): each call of the hook reads every
// GPU once and turns the readings into acceptance::TelemetrySample values.
//
// Header-only so that the bench tests check the mapping without the `shoal`
// binary. The hook owns the provider and is called from the sampler's one
// thread (bench/telemetry.h), never concurrently with itself.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acceptance/telemetry.h"
#include "agent/gpu/provider.h"
#include "core/status.h"

namespace shoal::cli {

// XIDs one sample reports at most: the rest of a storm adds nothing to the verdict.
inline constexpr uint64_t kMaxXidsPerSample = 16;

// One GPU's reading as a bench sample. `new_xids` is how many XID events the
// provider counted since the previous sample; the provider keeps only the
// last code, so each of them is reported with that code.
inline acceptance::TelemetrySample ToBenchSample(const agent::GpuSample& s, const std::string& uuid,
                                                 uint64_t new_xids, int64_t time_ms) {
  acceptance::TelemetrySample t;
  t.time_ms = time_ms;
  t.gpu_uuid = uuid;
  t.sm_clock_mhz = s.sm_clock_mhz;
  t.power_w = s.power_w;
  t.temperature_c = s.temperature_c;
  t.clock_reasons = s.clock_event_reasons;  // NVML's bits, which bench/telemetry.h uses unchanged
  t.ecc_corrected_total = s.ecc_corrected;
  t.ecc_uncorrected_total = s.ecc_uncorrected;
  t.xids.assign(std::min(new_xids, kMaxXidsPerSample), static_cast<uint32_t>(s.last_xid));
  return t;
}

// A hook over `provider`: Discover once (for the GPUs' UUIDs), one baseline
// reading for the XID counters, then a reading per call. A failed reading
// yields no samples (the sampler keeps going). `now_ms` gives Unix time.
inline Result<acceptance::TelemetryHook> ProviderTelemetry(
    std::unique_ptr<agent::GpuProvider> provider, std::function<int64_t()> now_ms) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<agent::GpuDevice> devices, provider->Discover());
  struct State {
    std::unique_ptr<agent::GpuProvider> provider;
    std::map<int, std::string> uuids;
    std::map<int, uint64_t> xids_seen;
  };
  auto state = std::make_shared<State>();
  for (const agent::GpuDevice& d : devices)
    state->uuids[d.index] = d.uuid;
  if (auto first = provider->Sample(); first.ok()) {
    for (const agent::GpuSample& s : *first)
      state->xids_seen[s.index] = s.xid_errors;
  }
  state->provider = std::move(provider);
  return acceptance::TelemetryHook([state, now_ms = std::move(now_ms)]() {
    std::vector<acceptance::TelemetrySample> out;
    auto samples = state->provider->Sample();
    if (!samples.ok()) return out;
    const int64_t t = now_ms();
    for (const agent::GpuSample& s : *samples) {
      auto uuid = state->uuids.find(s.index);
      if (uuid == state->uuids.end()) continue;
      uint64_t& seen = state->xids_seen[s.index];
      const uint64_t fresh = s.xid_errors > seen ? s.xid_errors - seen : 0;
      seen = std::max(seen, s.xid_errors);
      out.push_back(ToBenchSample(s, uuid->second, fresh, t));
    }
    return out;
  });
}

}  // namespace shoal::cli
