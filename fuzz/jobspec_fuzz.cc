// libFuzzer target for the job specs that clients POST to /v1/jobs: any
// input is parsed as JSON and read as a JobSpec. Besides the sanitizers'
// checks it asserts what the reader promises: an accepted spec passes
// JobSpec::Validate, and writing it back and reading it again gives the same
// JSON (nothing is lost or invented on the way).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/json.h"
#include "core/job.h"

namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = shoal::api::Parse(text);
  if (!json.ok()) return 0;
  auto spec = shoal::api::JobSpecFromJson(*json);
  if (!spec.ok()) return 0;
  Require(spec->Validate().ok());
  const shoal::api::Json once = shoal::api::ToJson(*spec);
  auto again = shoal::api::JobSpecFromJson(once);
  Require(again.ok());
  Require(shoal::api::ToJson(*again) == once);
  return 0;
}
