#include "acceptance/node_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/strings.h"

namespace shoal::acceptance {

bool NodeOptions::Runs(TestKind t) const {
  return std::find(tests.begin(), tests.end(), t) != tests.end();
}

std::vector<std::string> NodeArgs(const NodeOptions& options) {
  std::vector<std::string> tests;
  for (TestKind t : options.tests)
    tests.emplace_back(TestName(t));
  std::vector<std::string> args = {"--tests", Join(tests, ",")};
  if (options.quick) args.push_back("--quick");
  if (options.burn_in_s >= 0) {
    args.push_back("--burn-in-s");
    args.push_back(std::to_string(options.burn_in_s));
  }
  args.push_back("--nccl-max-bytes");
  args.push_back(std::to_string(options.nccl_max_bytes));
  return args;
}

Result<NodeOptions> ParseNodeArgs(const std::vector<std::string>& args) {
  NodeOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--quick") {
      o.quick = true;
      continue;
    }
    if (a != "--tests" && a != "--burn-in-s" && a != "--nccl-max-bytes") {
      return InvalidArgument(
          fmt::format("unknown argument '{}' (--quick, --tests LIST, --burn-in-s N, "
                      "--nccl-max-bytes N)",
                      a));
    }
    if (i + 1 >= args.size()) return InvalidArgument(fmt::format("{} needs a value", a));
    const std::string& v = args[++i];
    if (a == "--tests") {
      SHOAL_ASSIGN_OR_RETURN(o.tests, ParseTestList(v));
      continue;
    }
    auto n = ParseInt(v);
    if (!n.ok() || *n < 0)
      return InvalidArgument(fmt::format("{}: '{}' is not a non-negative integer", a, v));
    if (a == "--burn-in-s") {
      if (*n > 24 * 3600) return InvalidArgument("--burn-in-s: at most a day");
      o.burn_in_s = static_cast<int>(*n);
    } else {
      if (*n < 8) return InvalidArgument("--nccl-max-bytes: at least 8");
      o.nccl_max_bytes = *n;
    }
  }
  return o;
}

TimingPlan TimingFor(TestKind t, bool quick) {
  // Default mode: about 1 s of timed work per figure, so a figure is a median
  // over many repetitions; quick mode a quarter of that.
  const double scale = quick ? 0.25 : 1.0;
  switch (t) {
    case TestKind::kGemm:
      return {0.5 * scale, 1.0 * scale, 5};
    case TestKind::kHbm:
      return {0.1 * scale, 0.5 * scale, 5};
    case TestKind::kPcie:
      return {0.05 * scale, 0.3 * scale, 5};
    case TestKind::kP2p:
      return {0.02 * scale, 0.1 * scale, 3};
    case TestKind::kNccl:
      return {0.02 * scale, 0.1 * scale, 5};
    case TestKind::kBurnIn:
      return {1.0, 1.0, 1};  // 1 s intervals whatever the mode
  }
  return {};
}

int RepetitionsFor(double one_s, double target_s, int lo, int hi) {
  if (one_s <= 0) return hi;
  const double reps = std::ceil(target_s / one_s);
  return static_cast<int>(std::clamp(reps, static_cast<double>(lo), static_cast<double>(hi)));
}

int NcclIterations(int64_t size_bytes, bool quick) {
  int iters = 20;
  if (size_bytes > (int64_t{1} << 30)) {
    iters = 5;
  } else if (size_bytes > (int64_t{64} << 20)) {
    iters = 10;
  }
  return quick ? std::max(2, iters / 4) : iters;
}

int64_t HbmArrayBytes(int64_t free_bytes, bool quick) {
  constexpr int64_t kAlign = int64_t{2} << 20;
  const double fraction = quick ? 0.25 : 0.8;
  int64_t total = static_cast<int64_t>(static_cast<double>(free_bytes) * fraction);
  if (quick) total = std::min(total, int64_t{8} << 30);
  return total / 3 / kAlign * kAlign;
}

int64_t PcieBufferBytes(bool quick) {
  return quick ? int64_t{64} << 20 : int64_t{256} << 20;
}

}  // namespace shoal::acceptance
