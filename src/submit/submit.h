// What `shoal submit` understands: command-line options and batch scripts
// whose `#SHOAL` or `#SBATCH` lines carry the same options, so that a Slurm
// user's script runs unchanged where its options have a Shoal meaning. An
// option without a Shoal meaning is an error that names it (and the line), not
// silently dropped.
//
// Precedence: options on the command line override #SHOAL lines, which
// override #SBATCH lines (so a Slurm script can be adapted by adding #SHOAL
// lines); within one of these sources the last of an option wins, and two
// different ways of asking for one thing (--gres and --gpus, --mem and
// --mem-per-gpu, -c and --cpus-per-gpu) are an error. Across sources such a
// group is replaced whole: --gpus=4 on the command line replaces a script's
// --gres=gpu:a100:8, GPU type included.
//
// CPUs, as Slurm counts them (a task gets -c CPUs, 1 when -c is not given):
//  - With a known node count (-N, a per-node GPU count, or no GPUs, which
//    means one node unless -N says otherwise), tasks per node is
//    --ntasks-per-node, else ceil(-n / nodes), else 1, and
//    cpu_milli_per_node = tasks per node x cpus per task x 1000. Fewer tasks
//    than nodes is an error, as is -n above nodes x --ntasks-per-node.
//  - With --gpus (a total) and no -N, placement picks the nodes, so the
//    tasks' CPUs go with the GPUs: cpu_milli_per_gpu = ceil(-n x -c x 1000 /
//    GPUs). Without -n a job has one task per node and asks -c per node.
//  - --cpus-per-gpu sets cpu_milli_per_gpu and no per-node CPUs.
//  - None of -n, -c, --ntasks-per-node, --cpus-per-gpu: no CPUs are asked
//    for, and the server's defaults apply.
// Memory: --mem is per node, --mem-per-gpu per GPU (Slurm keeps them exclusive).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace shoal::submit {

struct Submission {
  JobSpec spec;                    // user is left empty: the server sets it
  std::vector<std::string> notes;  // options accepted with a caveat, for the user to see
  // The variables of the submitting shell that go with the job (--export;
  // the caller reads its environment): all of them, or those named. The
  // NAME=value ones are in spec.env already.
  bool export_all = true;
  std::vector<std::string> export_names;
  std::string export_file;  // NAME=value lines (or NUL-separated) to add
  // How `shoal submit` behaves: print the id alone; wait for the job to end
  // and exit with its exit code.
  bool parsable = false;
  bool wait = false;
  // sbatch --test-only: ask when and where it would start; submit nothing.
  bool test_only = false;
};

// Parses `shoal submit` arguments: options, then either --wrap=CMD, a script
// path (read by the caller and given as `script_text`), or a command and its
// arguments after the options. Options on the command line override the
// script's directives. `script_path` only names the script in errors.
//
// A non-empty `script_text` means there is a script: the word after the
// options, if any, is its path, and words after it (arguments to the
// script) are an error. Otherwise the words after the options (or after
// "--") are the command, each word shell-quoted into spec.command. The
// result has passed JobSpec::Validate.
Result<Submission> ParseSubmit(const std::vector<std::string>& args, std::string_view script_text,
                               std::string_view script_path);

// The directives of a batch script (lines starting with #SHOAL or #SBATCH
// before the first command), applied to `spec`. Errors name path:line.
// spec.command is left as it is.
Status ApplyScriptDirectives(std::string_view script_text, std::string_view script_path,
                             JobSpec& spec, std::vector<std::string>& notes);

// One option ("--gres=gpu:a100:8", or "-N" with its value "2"; a flag with an
// empty value) applied to `spec`. CPU amounts are worked out from the spec's
// node and task counts as they stand, and a lone -n assumes one CPU per task:
// to combine -n with -c, give both to ParseSubmit.
Status ApplyOption(std::string_view name, std::string_view value, JobSpec& spec,
                   std::vector<std::string>& notes);

// Where the script or command starts in `args`: the index of the first word
// that is neither an option nor an option's value (after "--" when that
// comes first), or args.size() when there is none. The caller looks there to
// decide whether a batch script is named, and reads it for ParseSubmit. Values
// are not checked; the errors are an option without its value and an option
// that is neither Shoal's nor Slurm's (the caller takes its own flags, such as
// --json, out of `args` first).
Result<size_t> CommandStart(const std::vector<std::string>& args);

// The words joined into one shell command line that gives them back
// unchanged: a word with anything but letters, digits and @%+=:,./_- is put
// in single quotes (and '=' too in the first word, where the shell would
// read NAME=value as an assignment).
std::string ShellJoin(const std::vector<std::string>& words);

// One option as `shoal submit --help` shows it; the same option works on
// #SHOAL and #SBATCH lines.
struct OptionInfo {
  std::string_view long_name;   // without the leading "--"
  char short_name;              // 0: none
  std::string_view value_name;  // empty: a flag
  std::string_view help;
};

// Every option this parser knows, in the order the help lists them. The one
// definition of the options: ParseSubmit, the directives and the help all
// read the same table.
std::vector<OptionInfo> OptionList();

// Whether `name` ("--nodes", "-N") is an option that takes a value; false for
// flags and for names that are not options.
bool TakesValue(std::string_view name);

// OK when `name` ("--nodes", "-N") is an option (Shoal's, or Slurm's without a
// meaning in Shoal); else the error ParseSubmit would give for it.
Status CheckOptionName(std::string_view name);

// What the help says after the options: how values are spelt, the
// directives, which source wins, how CPUs are counted.
std::string_view OptionNotes();

}  // namespace shoal::submit
