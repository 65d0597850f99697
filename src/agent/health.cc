#include "agent/health.h"

#include <fmt/format.h>

namespace shoal::agent {

HealthMonitor::HealthMonitor(std::vector<GpuDevice> devices, HealthOptions options)
    : devices_(std::move(devices)), options_(options), state_(devices_.size()) {}

std::vector<GpuHealth> HealthMonitor::Judge(const std::vector<GpuSample>& samples, Time now) {
  std::vector<GpuHealth> out(devices_.size());
  for (const GpuSample& s : samples) {
    if (s.index < 0 || static_cast<size_t>(s.index) >= devices_.size()) continue;
    const GpuDevice& d = devices_[static_cast<size_t>(s.index)];
    State& st = state_[static_cast<size_t>(s.index)];
    GpuHealth& h = out[static_cast<size_t>(s.index)];
    if (st.seen) {
      std::string news;
      if (s.xid_errors > st.xid_errors) {
        news = s.last_xid != 0 ? fmt::format("XID {} error", s.last_xid) : "XID error";
      } else if (s.ecc_uncorrected > st.ecc_uncorrected) {
        news =
            fmt::format("{} new uncorrectable ECC error{}", s.ecc_uncorrected - st.ecc_uncorrected,
                        s.ecc_uncorrected - st.ecc_uncorrected == 1 ? "" : "s");
      }
      if (!news.empty()) {
        st.unhealthy_until = now + options_.hold;
        st.held_reason = fmt::format("GPU {}: {}", d.index, news);
      }
    }
    st.seen = true;
    st.xid_errors = s.xid_errors;
    st.ecc_uncorrected = s.ecc_uncorrected;
    const double limit =
        d.temperature_limit_c > 0 ? d.temperature_limit_c : options_.default_temperature_limit_c;
    if (now < st.unhealthy_until) {
      h = {false, st.held_reason};
    } else if (s.temperature_c >= limit) {
      h = {false, fmt::format("GPU {}: {:.0f} C, at or over its {:.0f} C limit", d.index,
                              s.temperature_c, limit)};
    }
  }
  return out;
}

}  // namespace shoal::agent
