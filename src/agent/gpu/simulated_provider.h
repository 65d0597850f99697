// SimulatedProvider: the GPUs of a node profile with telemetry that follows
// their load, plus faults injected on demand, so that the agent, `shoal up`
// and the health checks run the same code with or without GPUs.
//
// Telemetry model (the figures and their grounds are in docs/agent-gpus.md):
// utilisation ~95 % of the load with noise; memory used from ~0.5 GiB idle
// to ~90 % of the GPU's memory at full load; power from ~12 % of TDP idle to
// ~90 % at full load; temperature moves towards a load-dependent target with
// a first-order lag (time constant kThermalTimeConstant); the SM clock is at
// the model's boost clock when busy; energy integrates power over time. Time
// comes only from the injected Clock, and noise only from the seed, so a
// fake clock and a seed reproduce every reading.
//
// Unlike GpuProvider's minimum, this class is thread-safe (one mutex): tests
// inject faults from their own thread while the agent samples.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/gpu/provider.h"
#include "core/cluster.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::agent {

// A fault to inject, from its text form (`shoal agent --sim-faults`,
// `shoal up --sim-fault NODE=...`): "xid:GPU:CODE", "ecc:GPU:CORRECTED[:UNCORRECTED]"
// or "hot:GPU:DEGREES", each with an optional "@DELAY" after the provider
// starts ("xid:5:79@30s").
struct SimFault {
  enum class Kind : uint8_t { kXid, kEcc, kOverheat };
  Kind kind = Kind::kXid;
  int gpu = 0;
  int xid = 0;
  uint64_t corrected = 0, uncorrected = 0;
  double temperature_c = 0;
  Duration delay{};

  // kInvalidArgument, naming the form expected, for text that is not one.
  static Result<SimFault> Parse(std::string_view text);
};

class SimulatedProvider final : public GpuProvider {
 public:
  // How fast a GPU's temperature follows its load.
  static constexpr Duration kThermalTimeConstant = std::chrono::seconds(40);

  // kNotFound for an unknown profile (the message lists the known ones).
  // `clock` must outlive the provider.
  static Result<std::unique_ptr<SimulatedProvider>> Create(const std::string& profile,
                                                           const std::string& node_name,
                                                           uint64_t seed, const Clock& clock);
  ~SimulatedProvider() override;

  std::string_view kind() const override { return "simulated"; }
  Result<std::vector<GpuDevice>> Discover() override;
  Result<std::vector<GpuSample>> Sample() override;
  // Load is clamped to [0, 1]; an index out of range is ignored (real GPUs
  // ignore loads too, and a stale index must not crash the agent).
  void SetLoad(int index, double load) override;
  // Between 25 % and 100 % of the rated power, as NVML's constraints for
  // data-centre GPUs roughly are; draw is then held to the cap.
  Status SetPowerCap(int index, double watts) override;
  // Any layout catalog/mig.h accepts for the model; the GPU's slices then
  // start idle and cool, their telemetry as a whole GPU's scaled to their
  // share. Refused while a job's load is on the GPU.
  Status SetMigLayout(int device, const std::vector<std::string>& profiles) override;

  // Faults. Each fails with kInvalidArgument for an index the node lacks.
  // Counters only grow, as on real GPUs until the driver reloads.
  //
  // One XID event (e.g. 48 double-bit ECC, 79 fallen off the bus) on GPU
  // `index`: the next Sample counts it and reports it as last_xid.
  Status InjectXid(int index, int xid);
  // Adds to the GPU's volatile ECC counters.
  Status InjectEccErrors(int index, uint64_t corrected, uint64_t uncorrected);
  // Holds the GPU's temperature at `temperature_c` from now on (the thermal
  // slowdown bits and a lower SM clock follow when it is at or over the
  // GPU's limit), until ClearFaults.
  Status InjectOverheat(int index, double temperature_c);
  // Ends an overheat; the temperature then relaxes from where it was held.
  Status ClearFaults(int index);
  // Injects `fault` once its delay has passed since this call: the first
  // Sample at or after that time shows it.
  Status Schedule(const SimFault& fault);

 private:
  struct GpuState;  // one GPU: its device, model figures, load, thermal state, counters
  // The node's physical GPUs, whole, and what a driver says of their model.
  struct Hardware {
    std::vector<Gpu> gpus;
    std::string driver_name;
    double boost_mhz = 0;
    double mem_clock_mhz = 0;
  };

  // gpus_ anew from hardware_ and layouts_ (mu_ held or not yet shared).
  Status Rebuild();

  Status CheckIndex(int index) const;
  void Apply(const SimFault& fault);  // mu_ held, index checked
  // Moves temperatures and energy from the last update to `now`, with the
  // loads that held over that interval.
  void AdvanceTo(Time now);

  const Clock& clock_;
  mutable std::mutex mu_;
  Hardware hardware_;
  std::vector<std::pair<int, std::vector<std::string>>> layouts_;  // catalog::MigLayouts
  std::vector<GpuState> gpus_;
  Rng rng_;
  Time updated_;
  std::vector<std::pair<Time, SimFault>> scheduled_;  // due time, fault

 public:
  // For Create only (nobody else can name GpuState); public for make_unique.
  SimulatedProvider(Hardware hardware, uint64_t seed, const Clock& clock);
};

}  // namespace shoal::agent
