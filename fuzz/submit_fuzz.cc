// libFuzzer target for `shoal submit` parsing: each input is read as a batch
// script (ParseSubmit and ApplyScriptDirectives) and, one word a line, as a
// command line. Besides the sanitizers' checks it asserts what the parser
// promises: an accepted submission passes JobSpec::Validate and runs the
// script it was given (or, from a command line, the command or --wrap's
// shell script).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "submit/submit.h"

namespace {

// Stays on in every build: a broken promise is a finding, not a log line.
void Require(bool condition) {
  if (!condition) __builtin_trap();
}

void CheckSpec(const shoal::JobSpec& spec) {
  Require(spec.Validate().ok());
  Require(spec.gpus == 0 || spec.gpus_per_node == 0);
  Require(spec.cpu_milli_per_node >= 0 && spec.cpu_milli_per_gpu >= 0);
  Require(spec.mem_mib_per_node >= 0 && spec.mem_mib_per_gpu >= 0);
  Require(spec.time_limit.count() >= 0);
  Require(!spec.command.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto sub = shoal::submit::ParseSubmit({"job.sh"}, text, "job.sh");
  if (sub.ok()) {
    CheckSpec(sub->spec);
    // An empty script text means no script: "job.sh" is then the command.
    Require(text.empty() ? !sub->spec.script : sub->spec.script && sub->spec.command.get() == text);
  }

  shoal::JobSpec spec;
  std::vector<std::string> notes;
  (void)shoal::submit::ApplyScriptDirectives(text, "job.sh", spec, notes);

  std::vector<std::string> args;
  size_t start = 0;
  while (start <= text.size() && args.size() < 64) {
    const size_t end = std::min(text.find('\n', start), text.size());
    args.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  auto from_args = shoal::submit::ParseSubmit(args, "", "");
  if (from_args.ok()) {
    CheckSpec(from_args->spec);
    // Without a script file, only --wrap makes a script, and it is a shell one.
    Require(!from_args->spec.script || from_args->spec.command->starts_with("#!/bin/sh\n"));
  }
  auto command_start = shoal::submit::CommandStart(args);
  if (command_start.ok()) Require(*command_start <= args.size());
  return 0;
}
