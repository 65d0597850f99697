#include "trace/gavel_throughputs.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <utility>

#include "core/check.h"
#include "core/strings.h"

namespace shoal::trace {

namespace {

// Column order of the CSV after job_type and scale_factor.
constexpr std::array<std::string_view, 3> kGpus = {"V100", "P100", "K80"};

using Table = std::map<std::pair<std::string, int>, std::array<double, 3>, std::less<>>;

// The embedded table is part of the build: a malformed row is a bug in the
// data file, caught by the tests, so it is a check rather than a Status.
Table Parse() {
  Table table;
  bool header = true;
  for (std::string_view line : Split(GavelThroughputsCsv(), '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string_view> f = Split(line, ',');
    SHOAL_CHECK(f.size() == 5,
                "data/gavel/throughputs.csv: rows are job_type,scale_factor,v100,p100,k80");
    auto scale = ParseInt(f[1]);
    SHOAL_CHECK(scale.ok(), "data/gavel/throughputs.csv: scale_factor is not an integer");
    std::array<double, 3> values{};
    for (size_t i = 0; i < values.size(); ++i) {
      auto v = ParseDouble(f[2 + i]);
      SHOAL_CHECK(v.ok(), "data/gavel/throughputs.csv: a throughput is not a number");
      values[i] = *v;
    }
    table[{std::string(f[0]), static_cast<int>(*scale)}] = values;
  }
  return table;
}

const Table& Throughputs() {
  static const Table table = Parse();
  return table;
}

const std::array<double, 3>* Find(std::string_view job_type, int scale_factor) {
  const Table& table = Throughputs();
  auto it = table.find(std::make_pair(std::string(job_type), scale_factor));
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

Result<double> GavelThroughput(std::string_view job_type, int scale_factor, std::string_view gpu) {
  size_t column = 0;
  while (column < kGpus.size() && kGpus[column] != gpu)
    ++column;
  if (column == kGpus.size())
    return NotFound(fmt::format("Gavel has no throughputs for GPU type '{}'", gpu));
  if (scale_factor < 1)
    return InvalidArgument(fmt::format("scale factor {} is not positive", scale_factor));
  if (const auto* row = Find(job_type, scale_factor)) return (*row)[column];
  const auto* one = Find(job_type, 1);
  if (one == nullptr)
    return NotFound(fmt::format("Gavel has no throughputs for job type '{}'", job_type));
  return (*one)[column] * scale_factor;
}

bool GavelThroughputMeasured(std::string_view job_type, int scale_factor) {
  return Find(job_type, scale_factor) != nullptr;
}

}  // namespace shoal::trace
