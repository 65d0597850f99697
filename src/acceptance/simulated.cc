#include "acceptance/simulated.h"

#include <fmt/format.h>

#include <algorithm>

#include "acceptance/expect.h"
#include "core/strings.h"

namespace shoal::acceptance {

namespace {

constexpr int kBurnInIntervals = 10;

bool Faulty(const SimulatedOptions& o, TestKind test, int gpu, int peer) {
  return std::any_of(o.faults.begin(), o.faults.end(), [&](const SimulatedFault& f) {
    return f.test == test && (test == TestKind::kNccl || f.gpu == gpu || f.gpu == peer);
  });
}

}  // namespace

Result<std::vector<SimulatedFault>> ParseSimulatedFaults(std::string_view text) {
  std::vector<SimulatedFault> out;
  for (std::string_view item : Split(text, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    const std::string_view gpu = item.substr(0, colon);
    const auto index =
        gpu.starts_with("gpu") ? ParseInt(gpu.substr(3)) : Result<int64_t>(InvalidArgument(""));
    if (colon == std::string_view::npos || !index.ok() || *index < 0 || *index >= 64) {
      return InvalidArgument(fmt::format("'{}' is not GPU:TEST such as gpu3:gemm", item));
    }
    SHOAL_ASSIGN_OR_RETURN(TestKind test, ParseTestName(item.substr(colon + 1)));
    out.push_back({static_cast<int>(*index), test});
  }
  return out;
}

NodeResults SimulatedResults(const catalog::GpuSpec& spec, const SimulatedOptions& o) {
  NodeResults r;
  r.host = o.host;
  r.quick = o.quick;
  r.rank = o.rank;
  r.world_size = std::max(1, o.world_size);
  r.started_ms = o.now_ms;
  r.finished_ms = o.now_ms + 1000;
  r.notes.push_back(fmt::format("{} for {} ({} GPUs)", kSimulatedNote, spec.model, o.gpus));
  for (int g = 0; g < o.gpus; ++g) {
    GpuInfo info;
    info.index = g;
    info.name = spec.model;
    info.uuid = fmt::format("GPU-simulated-{}", g);
    info.memory_mib = spec.memory_mib;
    r.gpus.push_back(info);
  }
  // As shoal-bench-node: several processes run the NCCL test only.
  const std::vector<TestKind> tests = r.world_size > 1  ? std::vector<TestKind>{TestKind::kNccl}
                                      : o.tests.empty() ? AllTests()
                                                        : o.tests;
  ExpectContext ctx;
  ctx.node_gpus = o.gpus;
  ctx.multi_node = r.world_size > 1;
  ctx.nccl_min_busbw_gbps = o.nccl_min_busbw_gbps;
  // One figure: the expectation, or below the pass mark for a faulty GPU.
  auto add = [&](Measurement m, std::string_view unit, bool faulty) {
    m.unit = std::string(unit);
    const auto e = Expect(m, spec, ctx);
    if (!e) return;
    m.value = faulty ? 0.8 * e->min_pass : e->expected;
    m.check = "simulated: not measured";
    m.stats = {1, m.value, m.value, m.value, m.value, 0};
    if (m.test == TestKind::kBurnIn) m.series.assign(kBurnInIntervals, m.value);
    r.measurements.push_back(std::move(m));
  };
  auto figure = [](TestKind test, std::string metric, int gpu, int peer = -1) {
    Measurement m;
    m.test = test;
    m.metric = std::move(metric);
    m.gpu = gpu;
    m.peer = peer;
    return m;
  };
  for (TestKind t : tests) {
    switch (t) {
      case TestKind::kGemm:
        for (int g = 0; g < o.gpus; ++g) {
          for (const char* p : {"fp64", "tf32", "bf16", "fp16", "fp8"}) {
            add(figure(t, p, g), kUnitTflops, Faulty(o, t, g, -1));
          }
        }
        break;
      case TestKind::kHbm:
        for (int g = 0; g < o.gpus; ++g) {
          for (const char* m : {"copy", "triad"})
            add(figure(t, m, g), kUnitGbps, Faulty(o, t, g, -1));
        }
        break;
      case TestKind::kPcie:
        for (int g = 0; g < o.gpus; ++g) {
          for (const char* m : {"h2d", "d2h", "bidir"})
            add(figure(t, m, g), kUnitGbps, Faulty(o, t, g, -1));
        }
        break;
      case TestKind::kP2p:
        for (int g = 0; g < o.gpus; ++g) {
          for (int p = 0; p < o.gpus; ++p) {
            if (p == g) continue;
            add(figure(t, "access", g, p), "", Faulty(o, t, g, p));
            add(figure(t, "bw", g, p), kUnitGbps, Faulty(o, t, g, p));
          }
        }
        break;
      case TestKind::kNccl:
        if (o.gpus * r.world_size < 2) break;
        for (const char* m : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
          Measurement n = figure(t, m, -1);
          n.ranks = o.gpus * r.world_size;
          n.size_bytes = o.quick ? int64_t{1} << 30 : int64_t{8} << 30;
          add(std::move(n), kUnitGbps, Faulty(o, t, -1, -1));
        }
        break;
      case TestKind::kBurnIn:
        r.burn_in_start_ms = o.now_ms;
        r.burn_in_end_ms = o.now_ms + 1000;
        for (int g = 0; g < o.gpus; ++g)
          add(figure(t, "sustained_bf16", g), kUnitTflops, Faulty(o, t, g, -1));
        break;
    }
  }
  return r;
}

}  // namespace shoal::acceptance
