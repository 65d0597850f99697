// What `shoal submit` understands: command-line options and batch scripts
// whose `#SHOAL` or `#SBATCH` lines carry the same options, so that a Slurm
// user's script runs unchanged where its options have a Shoal meaning. An
// option without a Shoal meaning is an error that names it (and the line), not
// silently dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace shoal::submit {

struct Submission {
  JobSpec spec;                        // user is left empty: the server sets it
  std::vector<std::string> notes;      // options accepted with a caveat, for the user to see
};

// Parses `shoal submit` arguments: options, then either --wrap=CMD, a script
// path (read by the caller and given as `script_text`), or a command and its
// arguments after the options. Options on the command line override the
// script's directives. `script_path` only names the script in errors.
Result<Submission> ParseSubmit(const std::vector<std::string>& args, std::string_view script_text,
                               std::string_view script_path);

// The directives of a batch script (lines starting with #SHOAL or #SBATCH
// before the first command), applied to `spec`. Errors name path:line.
Status ApplyScriptDirectives(std::string_view script_text, std::string_view script_path, JobSpec& spec,
                             std::vector<std::string>& notes);

// One option ("--gres=gpu:a100:8", or "-N" with its value "2") applied to `spec`.
Status ApplyOption(std::string_view name, std::string_view value, JobSpec& spec, std::vector<std::string>& notes);

// The options this parser knows, for `shoal submit --help`.
std::string OptionHelp();

}  // namespace shoal::submit
