#include "api/prometheus.h"

#include <iterator>
#include <optional>

namespace shoal::api::prometheus {

namespace {

// A label value with \, " and newlines escaped, as the format requires.
void AppendEscaped(Buffer& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      out.append(std::string_view("\\\\"));
    } else if (c == '"') {
      out.append(std::string_view("\\\""));
    } else if (c == '\n') {
      out.append(std::string_view("\\n"));
    } else {
      out.push_back(c);
    }
  }
}

// The dcgm-exporter fields Shoal's agents report, in dcgm-exporter's order,
// with its HELP texts (etc/default-counters.csv).
struct DcgmField {
  const char* name;
  const char* type;
  const char* help;
  double (*value)(const GpuTelemetry&);
};

constexpr DcgmField kDcgmFields[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
     [](const GpuTelemetry& t) { return t.sm_clock_mhz; }},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
     [](const GpuTelemetry& t) { return t.temperature_c; }},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
     [](const GpuTelemetry& t) { return t.power_w; }},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).",
     [](const GpuTelemetry& t) { return t.energy_j * 1000.0; }},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
     [](const GpuTelemetry& t) { return t.util_pct; }},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
     [](const GpuTelemetry& t) { return t.mem_copy_util_pct; }},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
     [](const GpuTelemetry& t) { return static_cast<double>(t.last_xid); }},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
     [](const GpuTelemetry& t) { return static_cast<double>(t.fb_free_mib); }},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
     [](const GpuTelemetry& t) { return static_cast<double>(t.fb_used_mib); }},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     [](const GpuTelemetry& t) { return static_cast<double>(t.ecc_corrected); }},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     [](const GpuTelemetry& t) { return static_cast<double>(t.ecc_uncorrected); }},
};

// The rest of dcgm-exporter's default counters, from GpuCounters: a family
// only when some GPU has the value, a sample only for the GPUs that do.
struct DcgmCounter {
  const char* name;
  const char* type;
  const char* help;
  std::optional<double> (*value)(const GpuCounters&);
};

template <typename T>
std::optional<double> AsDouble(const std::optional<T>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

constexpr DcgmCounter kDcgmCounters[] = {
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
     [](const GpuCounters& c) { return c.mem_clock_mhz; }},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).",
     [](const GpuCounters& c) { return c.memory_temp_c; }},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
     [](const GpuCounters& c) { return AsDouble(c.pcie_replays); }},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).",
     [](const GpuCounters& c) { return c.enc_util_pct; }},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).",
     [](const GpuCounters& c) { return c.dec_util_pct; }},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "NVLink data sent and received over all links (in KiB).",
     [](const GpuCounters& c) { return AsDouble(c.nvlink_kib); }},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors.",
     [](const GpuCounters& c) { return AsDouble(c.remapped_rows_correctable); }},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors.",
     [](const GpuCounters& c) { return AsDouble(c.remapped_rows_uncorrectable); }},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed (1: yes).",
     [](const GpuCounters& c) { return AsDouble(c.row_remap_failed); }},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
     [](const GpuCounters& c) { return c.prof_gr_engine_active; }},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.",
     [](const GpuCounters& c) { return c.prof_sm_active; }},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
     "The ratio of number of warps resident on an SM to the maximum.",
     [](const GpuCounters& c) { return c.prof_sm_occupancy; }},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active.",
     [](const GpuCounters& c) { return c.prof_tensor_active; }},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.",
     [](const GpuCounters& c) { return c.prof_dram_active; }},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus (in B/s).",
     [](const GpuCounters& c) { return c.prof_pcie_tx_bytes; }},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus (in B/s).",
     [](const GpuCounters& c) { return c.prof_pcie_rx_bytes; }},
};

}  // namespace

void Label(Buffer& out, std::string_view name, std::string_view value, bool first) {
  if (!first) out.push_back(',');
  out.append(name);
  out.append(std::string_view("=\""));
  AppendEscaped(out, value);
  out.push_back('"');
}

std::string Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
  Buffer b;
  bool first = true;
  for (const auto& [k, v] : labels) {
    Label(b, k, v, first);
    first = false;
  }
  return fmt::to_string(b);
}

void Family(Buffer& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void Sample(Buffer& out, std::string_view name, std::string_view labels, double value) {
  out.append(name);
  if (!labels.empty()) {
    out.push_back('{');
    out.append(labels);
    out.push_back('}');
  }
  out.push_back(' ');
  // Whole numbers without a fraction or exponent: most values are counts.
  if (value == static_cast<double>(static_cast<int64_t>(value)) && value > -1e15 && value < 1e15) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<int64_t>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
  out.push_back('\n');
}

std::string DcgmLabels(const DcgmGpu& gpu) {
  Buffer b;
  // dcgm-exporter's order; `hostname` too, the spelling most other exporters use.
  fmt::format_to(std::back_inserter(b), "gpu=\"{}\"", gpu.index);
  Label(b, "UUID", gpu.uuid);
  if (!gpu.pci_bus_id.empty()) Label(b, "pci_bus_id", gpu.pci_bus_id);
  fmt::format_to(std::back_inserter(b), ",device=\"nvidia{}\"", gpu.index);
  Label(b, "modelName", gpu.model);
  if (!gpu.mig_profile.empty()) {
    Label(b, "GPU_I_PROFILE", gpu.mig_profile);
    fmt::format_to(std::back_inserter(b), ",GPU_I_ID=\"{}\"", gpu.mig_gi);
  }
  Label(b, "Hostname", gpu.hostname);
  Label(b, "hostname", gpu.hostname);
  if (!gpu.driver_version.empty()) Label(b, "DCGM_FI_DRIVER_VERSION", gpu.driver_version);
  if (!gpu.jobs.empty()) {
    std::string ids, users, accounts;
    for (const GpuJob& j : gpu.jobs) {
      if (!ids.empty()) {
        ids += ',';
        users += ',';
        accounts += ',';
      }
      ids += std::to_string(j.id);
      users += j.user;
      accounts += j.account;
    }
    Label(b, "hpc_job", ids);
    Label(b, "user", users);
    Label(b, "account", accounts);
  }
  return fmt::to_string(b);
}

void AppendDcgmFields(Buffer& out, std::span<const DcgmLine> lines) {
  if (lines.empty()) return;
  for (const DcgmField& f : kDcgmFields) {
    Family(out, f.name, f.type, f.help);
    for (const DcgmLine& l : lines)
      Sample(out, f.name, l.labels, f.value(*l.telemetry));
  }
  for (const DcgmCounter& f : kDcgmCounters) {
    bool family = false;
    for (const DcgmLine& l : lines) {
      if (l.counters == nullptr) continue;
      const std::optional<double> v = f.value(*l.counters);
      if (!v) continue;
      if (!family) Family(out, f.name, f.type, f.help);
      family = true;
      Sample(out, f.name, l.labels, *v);
    }
  }
}

}  // namespace shoal::api::prometheus
