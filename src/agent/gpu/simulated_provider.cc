#include "agent/gpu/simulated_provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "agent/gpu/nvml_api.h"
#include "catalog/gpus.h"
#include "catalog/mig.h"
#include "catalog/profiles.h"
#include "core/strings.h"

namespace shoal::agent {

namespace {

// The telemetry model's figures. They are assumptions drawn from what
// nvidia-smi shows on data-centre GPUs, not datasheet lines; docs/agent-gpus.md
// gives the grounds for each.
constexpr double kIdlePowerFraction = 0.12;    // of TDP, an idle GPU in a P0/P8 state
constexpr double kBusyPowerFraction = 0.90;    // of TDP, a training step at full load
constexpr double kMinCapFraction = 0.25;       // the lowest power limit, as a share of TDP
constexpr double kPowerNoiseFraction = 0.015;  // of TDP, busy; a third of it idle
constexpr double kIdleTemperatureC = 33;       // air- or liquid-cooled chassis, idle
constexpr double kBusyTemperatureRiseC = 37;   // over idle at full load: ~70 degC
constexpr double kTemperatureLimitC = 89;      // NVML slowdown threshold of an H200, all models
constexpr double kUtilPerLoadPct = 95;         // kernels leave gaps between launches
constexpr double kUtilNoisePct = 3;
constexpr double kMemCopyUtilPerLoadPct = 40;  // HBM busy share of a typical training step
constexpr int64_t kIdleMemoryMib = 512;        // driver context and ECC reservations
constexpr double kBusyMemoryFraction = 0.90;   // PyTorch's caching allocator keeps most
constexpr int64_t kMemoryNoiseMib = 64;
constexpr double kIdleSmClockMhz = 345;          // the idle clock nvidia-smi shows on Hopper
constexpr double kThrottledClockFraction = 0.7;  // of boost, when at the thermal limit
constexpr double kMemoryWarmerC = 3;             // HBM runs a little warmer than the die
// NVLink data each way at full load: gradient all-reduces of a data-parallel
// step, well under a link's capacity (100 GiB/s, in KiB/s).
constexpr double kNvlinkKibPerSecond = 100.0 * 1024 * 1024;

// What the profiles' GPU models look like to a driver: the name NVML reports
// (the names the catalogue test checks, from nvidia-smi on each part), the
// maximum SM boost clock from NVIDIA's datasheets and architecture
// whitepapers, and the memory clock nvidia-smi shows under load (0: not
// known here; the simulated GPU then reports none).
struct Model {
  std::string_view model;
  std::string_view driver_name;
  double boost_mhz;
  double mem_clock_mhz;
};

constexpr Model kModels[] = {
    {"H100-SXM-80GB", "NVIDIA H100 80GB HBM3", 1980, 2619},
    {"H200-SXM-141GB", "NVIDIA H200", 1980, 3201},
    {"B200-SXM-180GB", "NVIDIA B200", 1965, 0},
    {"A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 1410, 1593},
    {"A100-PCIE-80GB", "NVIDIA A100 80GB PCIe", 1410, 1512},
    {"L40S-48GB", "NVIDIA L40S", 2520, 9001},
    {"V100-SXM2-32GB", "Tesla V100-SXM2-32GB", 1530, 877},
    {"T4-16GB", "Tesla T4", 1590, 5001},
    {"A10-24GB", "NVIDIA A10", 1695, 6251},
};

// A model not in kModels (a profile added later) still simulates, with a
// plain name and a middling clock.
constexpr double kDefaultBoostMhz = 1500;

// Uniform noise in [-amplitude, amplitude].
double Noise(Rng& rng, double amplitude) {
  return (rng.UniformDouble() * 2 - 1) * amplitude;
}

}  // namespace

Result<SimFault> SimFault::Parse(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format(
        "fault '{}': {} (xid:GPU:CODE, ecc:GPU:CORRECTED[:UNCORRECTED] or hot:GPU:DEGREES, "
        "optionally @DELAY such as @30s)",
        text, why));
  };
  SimFault f;
  std::string_view body = text;
  if (const size_t at = body.find('@'); at != std::string_view::npos) {
    auto delay = ParseDuration(body.substr(at + 1));
    if (!delay.ok() || *delay < Duration::zero()) return bad("the delay is not a duration");
    f.delay = *delay;
    body = body.substr(0, at);
  }
  const std::vector<std::string_view> parts = Split(body, ':');
  if (parts.size() < 3) return bad("too few parts");
  auto number = [](std::string_view s, int64_t max) -> std::optional<int64_t> {
    auto v = ParseInt(s);
    return v.ok() && *v >= 0 && *v <= max ? std::optional<int64_t>(*v) : std::nullopt;
  };
  const auto gpu = number(parts[1], 1023);
  if (!gpu) return bad("the GPU is not an index");
  f.gpu = static_cast<int>(*gpu);
  if (parts[0] == "xid" && parts.size() == 3) {
    const auto code = number(parts[2], 1000000);
    if (!code || *code == 0) return bad("the XID is not a positive number");
    f.kind = Kind::kXid;
    f.xid = static_cast<int>(*code);
  } else if (parts[0] == "ecc" && parts.size() <= 4) {
    const auto corrected = number(parts[2], int64_t{1} << 40);
    const auto uncorrected = parts.size() == 4 ? number(parts[3], int64_t{1} << 40) : 0;
    if (!corrected || !uncorrected) return bad("the counts are not whole numbers");
    f.kind = Kind::kEcc;
    f.corrected = static_cast<uint64_t>(*corrected);
    f.uncorrected = static_cast<uint64_t>(*uncorrected);
  } else if (parts[0] == "hot" && parts.size() == 3) {
    auto degrees = ParseDouble(parts[2]);
    if (!degrees.ok() || *degrees < 0 || *degrees > 200) return bad("degrees C, 0 to 200");
    f.kind = Kind::kOverheat;
    f.temperature_c = *degrees;
  } else {
    return bad("unknown kind or wrong number of parts");
  }
  return f;
}

struct SimulatedProvider::GpuState {
  GpuDevice device;
  double boost_mhz = kDefaultBoostMhz;
  double mem_clock_mhz = 0;  // 0: not known
  bool nvlink = false;       // joined to another GPU by NVLink
  double nvlink_kib = 0;     // sent and received
  double load = 0;
  double cap_w = 0;                          // a job's power cap; 0: the rated limit
  double temperature_c = kIdleTemperatureC;  // the lagged state
  double energy_j = 0;
  uint64_t ecc_corrected = 0;
  uint64_t ecc_uncorrected = 0;
  uint64_t xid_errors = 0;
  int last_xid = 0;
  std::optional<double> held_temperature_c;  // an injected overheat

  double MeanPowerW() const {
    const double fraction = kIdlePowerFraction + (kBusyPowerFraction - kIdlePowerFraction) * load;
    return std::min(device.power_limit_w * fraction, LimitW());
  }
  double LimitW() const { return cap_w > 0 ? cap_w : device.power_limit_w; }
  double TargetTemperatureC() const { return kIdleTemperatureC + kBusyTemperatureRiseC * load; }
};

Result<std::unique_ptr<SimulatedProvider>> SimulatedProvider::Create(const std::string& profile,
                                                                     const std::string& node_name,
                                                                     uint64_t seed,
                                                                     const Clock& clock) {
  const catalog::NodeProfile* p = catalog::FindProfile(profile);
  if (p == nullptr) {
    return NotFound(fmt::format("unknown node profile \"{}\" (known: {})", profile,
                                Join(catalog::ProfileNames(), ", ")));
  }
  // The node design's power per GPU first (a DGX B200 runs its B200s at
  // 1,000 W), the catalogue's TDP where the profile has none.
  double tdp_w = p->gpu_tdp_w;
  const catalog::GpuSpec* spec = catalog::FindGpu(p->gpu_model);
  if (tdp_w <= 0 && spec != nullptr) tdp_w = spec->tdp_w;
  Hardware hw;
  hw.gpus = catalog::MakeNode(*p, node_name).gpus;
  for (Gpu& gpu : hw.gpus) {
    gpu.device = gpu.index;
    gpu.rated_w = tdp_w;
  }
  hw.driver_name = "NVIDIA " + std::string(p->gpu_model);
  hw.boost_mhz = kDefaultBoostMhz;
  for (const Model& m : kModels) {
    if (m.model != p->gpu_model) continue;
    hw.driver_name = m.driver_name;
    hw.boost_mhz = m.boost_mhz;
    hw.mem_clock_mhz = m.mem_clock_mhz;
  }
  auto provider = std::make_unique<SimulatedProvider>(std::move(hw), seed, clock);
  SHOAL_RETURN_IF_ERROR(provider->Rebuild());
  return provider;
}

SimulatedProvider::SimulatedProvider(Hardware hardware, uint64_t seed, const Clock& clock)
    : clock_(clock), hardware_(std::move(hardware)), rng_(seed), updated_(clock.Now()) {}

SimulatedProvider::~SimulatedProvider() = default;

Status SimulatedProvider::Rebuild() {
  SHOAL_ASSIGN_OR_RETURN(const std::vector<Gpu> units,
                         catalog::PartitionGpus(hardware_.gpus, layouts_));
  std::vector<GpuState> gpus;
  std::map<int, int> slices_of;  // physical GPU -> its slices so far (their MIG index)
  for (const Gpu& gpu : units) {
    GpuState state;
    GpuDevice& d = state.device;
    d.index = gpu.index;
    d.device = gpu.Device();
    d.uuid = gpu.uuid;
    d.name = hardware_.driver_name;
    if (gpu.IsMigSlice()) d.name += " MIG " + gpu.mig_profile;  // as NVML names a MIG device
    d.model = gpu.model;
    d.memory_mib = gpu.memory_mib;
    d.nvlink_island = gpu.nvlink_island;
    d.numa_node = gpu.numa_node;
    // Synthetic but well-formed and distinct, in NVML's spelling.
    d.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + 0x10 * d.device);
    d.power_limit_w = gpu.rated_w;
    d.temperature_limit_c = kTemperatureLimitC;
    d.mig_enabled = gpu.IsMigSlice();
    d.mig_profile = gpu.mig_profile;
    d.mig_gi = gpu.mig_gi;
    d.mig_ci = gpu.mig_ci;
    if (gpu.IsMigSlice()) d.mig_index = slices_of[d.device]++;
    state.boost_mhz = hardware_.boost_mhz;
    state.mem_clock_mhz = hardware_.mem_clock_mhz;
    gpus.push_back(std::move(state));
  }
  // NVLink counts for whole GPUs that share an island; MIG instances have
  // no NVLink of their own.
  for (GpuState& g : gpus) {
    g.nvlink = !g.device.mig_enabled &&
               std::count_if(gpus.begin(), gpus.end(), [&](const GpuState& other) {
                 return other.device.nvlink_island == g.device.nvlink_island;
               }) > 1;
  }
  gpus_ = std::move(gpus);
  return Status::Ok();
}

Status SimulatedProvider::SetMigLayout(int device, const std::vector<std::string>& profiles) {
  std::lock_guard lock(mu_);
  if (device < 0 || static_cast<size_t>(device) >= hardware_.gpus.size()) {
    return InvalidArgument(
        fmt::format("no GPU {} on this node (it has {})", device, hardware_.gpus.size()));
  }
  for (const GpuState& g : gpus_) {
    if (g.device.device == device && g.load > 0)
      return FailedPrecondition(fmt::format("GPU {} is busy", device));
  }
  const catalog::MigLayouts before = layouts_;
  std::erase_if(layouts_, [device](const auto& l) { return l.first == device; });
  if (!profiles.empty()) layouts_.emplace_back(device, profiles);
  std::sort(layouts_.begin(), layouts_.end());
  AdvanceTo(clock_.Now());
  if (Status s = Rebuild(); !s.ok()) {
    layouts_ = before;
    return s;
  }
  scheduled_.clear();  // faults were aimed at GPU indices that have changed
  return Status::Ok();
}

Result<std::vector<GpuDevice>> SimulatedProvider::Discover() {
  std::lock_guard lock(mu_);
  std::vector<GpuDevice> devices;
  devices.reserve(gpus_.size());
  for (const GpuState& g : gpus_)
    devices.push_back(g.device);
  return devices;
}

void SimulatedProvider::AdvanceTo(Time now) {
  const double dt_s = ToSeconds(now - updated_);
  if (dt_s <= 0) return;  // a clock that stands still or steps back changes nothing
  // Exact for a load that held over the interval: T -> target + (T0 - target) e^(-dt/tau).
  const double decay = std::exp(-dt_s / ToSeconds(kThermalTimeConstant));
  for (GpuState& g : gpus_) {
    const double target_c = g.TargetTemperatureC();
    g.temperature_c = target_c + (g.temperature_c - target_c) * decay;
    g.energy_j += g.MeanPowerW() * dt_s;
    if (g.nvlink) g.nvlink_kib += 2 * kNvlinkKibPerSecond * g.load * dt_s;
  }
  updated_ = now;
}

Result<std::vector<GpuSample>> SimulatedProvider::Sample() {
  std::lock_guard lock(mu_);
  const Time now = clock_.Now();
  AdvanceTo(now);
  std::erase_if(scheduled_, [&](const std::pair<Time, SimFault>& due) {
    if (due.first > now) return false;
    Apply(due.second);
    return true;
  });
  std::vector<GpuSample> samples;
  samples.reserve(gpus_.size());
  for (const GpuState& g : gpus_) {
    const GpuDevice& d = g.device;
    const bool busy = g.load > 0;
    // The noise is drawn in the same order whether or not a GPU is busy, so
    // that one GPU's load never changes another GPU's readings.
    const double util_noise = Noise(rng_, kUtilNoisePct);
    const double copy_noise = Noise(rng_, kUtilNoisePct);
    const double memory_noise = Noise(rng_, static_cast<double>(kMemoryNoiseMib));
    const double power_noise = Noise(rng_, kPowerNoiseFraction * d.power_limit_w);
    const double temperature_noise = Noise(rng_, 0.5);
    const double clock_noise = Noise(rng_, 0.01);

    GpuSample s;
    s.index = d.index;
    s.util_pct = busy ? std::clamp(kUtilPerLoadPct * g.load + util_noise, 0.0, 100.0) : 0;
    s.mem_copy_util_pct =
        busy ? std::clamp(kMemCopyUtilPerLoadPct * g.load + copy_noise, 0.0, 100.0) : 0;
    const double busy_mib = kBusyMemoryFraction * static_cast<double>(d.memory_mib);
    double used_mib = static_cast<double>(kIdleMemoryMib) +
                      (busy_mib - static_cast<double>(kIdleMemoryMib)) * g.load;
    if (busy) used_mib += memory_noise;
    s.fb_used_mib = std::clamp<int64_t>(std::llround(used_mib), 0, d.memory_mib);
    s.fb_free_mib = d.memory_mib - s.fb_used_mib;
    s.power_w =
        std::clamp(g.MeanPowerW() + (busy ? power_noise : power_noise / 3), 0.0, g.LimitW());
    // NVML reports whole degrees.
    s.temperature_c = g.held_temperature_c ? *g.held_temperature_c
                                           : std::round(g.temperature_c + temperature_noise);
    const bool hot = s.temperature_c >= d.temperature_limit_c;
    if (!busy) {
      s.sm_clock_mhz = kIdleSmClockMhz;
      s.clock_event_reasons |= nvmlClocksEventReasonGpuIdle;
    } else {
      s.sm_clock_mhz =
          std::round(g.boost_mhz * ((hot ? kThrottledClockFraction : 0.99) + clock_noise));
    }
    if (hot) {
      s.clock_event_reasons |=
          nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksEventReasonHwThermalSlowdown;
    }
    s.energy_j = g.energy_j;
    s.ecc_corrected = g.ecc_corrected;
    s.ecc_uncorrected = g.ecc_uncorrected;
    s.xid_errors = g.xid_errors;
    s.last_xid = g.last_xid;
    // dcgm-exporter's other counters: a healthy part's, with no video work.
    api::GpuCounters& c = s.counters;
    if (g.mem_clock_mhz > 0) c.mem_clock_mhz = g.mem_clock_mhz;
    c.memory_temp_c = s.temperature_c + kMemoryWarmerC;
    c.enc_util_pct = 0;
    c.dec_util_pct = 0;
    c.pcie_replays = 0;
    if (g.nvlink) c.nvlink_kib = static_cast<uint64_t>(g.nvlink_kib);
    c.remapped_rows_correctable = 0;
    c.remapped_rows_uncorrectable = 0;
    c.row_remap_failed = false;
    samples.push_back(s);
  }
  return samples;
}

void SimulatedProvider::SetLoad(int index, double load) {
  std::lock_guard lock(mu_);
  if (!CheckIndex(index).ok()) return;
  // The old load shaped the interval up to now.
  AdvanceTo(clock_.Now());
  gpus_[static_cast<size_t>(index)].load = std::isfinite(load) ? std::clamp(load, 0.0, 1.0) : 0.0;
}

Status SimulatedProvider::SetPowerCap(int index, double watts) {
  std::lock_guard lock(mu_);
  SHOAL_RETURN_IF_ERROR(CheckIndex(index));
  GpuState& g = gpus_[static_cast<size_t>(index)];
  const double rated = g.device.power_limit_w;
  if (watts != 0 && !(watts >= kMinCapFraction * rated && watts <= rated)) {
    return InvalidArgument(
        fmt::format("GPU {} takes a power limit from {:.0f} to {:.0f} W, not {:.0f}", index,
                    kMinCapFraction * rated, rated, watts));
  }
  AdvanceTo(clock_.Now());  // the old limit held up to now
  g.cap_w = watts;
  return Status::Ok();
}

Status SimulatedProvider::CheckIndex(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= gpus_.size()) {
    return InvalidArgument(fmt::format("no GPU {} on this node (it has {})", index, gpus_.size()));
  }
  return Status::Ok();
}

void SimulatedProvider::Apply(const SimFault& f) {
  GpuState& g = gpus_[static_cast<size_t>(f.gpu)];
  switch (f.kind) {
    case SimFault::Kind::kXid:
      g.xid_errors++;
      g.last_xid = f.xid;
      break;
    case SimFault::Kind::kEcc:
      g.ecc_corrected += f.corrected;
      g.ecc_uncorrected += f.uncorrected;
      break;
    case SimFault::Kind::kOverheat:
      g.held_temperature_c = f.temperature_c;
      break;
  }
}

Status SimulatedProvider::Schedule(const SimFault& fault) {
  std::lock_guard lock(mu_);
  SHOAL_RETURN_IF_ERROR(CheckIndex(fault.gpu));
  if (fault.delay <= Duration::zero()) {
    Apply(fault);
  } else {
    scheduled_.emplace_back(clock_.Now() + fault.delay, fault);
  }
  return Status::Ok();
}

Status SimulatedProvider::InjectXid(int index, int xid) {
  return Schedule({.kind = SimFault::Kind::kXid, .gpu = index, .xid = xid});
}

Status SimulatedProvider::InjectEccErrors(int index, uint64_t corrected, uint64_t uncorrected) {
  return Schedule({.kind = SimFault::Kind::kEcc,
                   .gpu = index,
                   .corrected = corrected,
                   .uncorrected = uncorrected});
}

Status SimulatedProvider::InjectOverheat(int index, double temperature_c) {
  return Schedule(
      {.kind = SimFault::Kind::kOverheat, .gpu = index, .temperature_c = temperature_c});
}

Status SimulatedProvider::ClearFaults(int index) {
  std::lock_guard lock(mu_);
  SHOAL_RETURN_IF_ERROR(CheckIndex(index));
  GpuState& g = gpus_[static_cast<size_t>(index)];
  AdvanceTo(clock_.Now());
  if (g.held_temperature_c) g.temperature_c = *g.held_temperature_c;
  g.held_temperature_c.reset();
  return Status::Ok();
}

Result<std::unique_ptr<GpuProvider>> MakeSimulated(const std::string& profile,
                                                   const std::string& node_name, uint64_t seed,
                                                   const Clock& clock) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedProvider> provider,
                         SimulatedProvider::Create(profile, node_name, seed, clock));
  return std::unique_ptr<GpuProvider>(std::move(provider));
}

}  // namespace shoal::agent
