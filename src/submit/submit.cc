#include "submit/submit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/strings.h"
#include "submit/directives.h"
#include "submit/options.h"
#include "submit/request.h"

namespace shoal::submit {

namespace {

bool IsSafeInShell(char ch, bool first_word) {
  if (std::isalnum(static_cast<unsigned char>(ch))) return true;
  if (ch == '=') return !first_word;
  return std::string_view("@%+:,./_-").find(ch) != std::string_view::npos;
}

std::string ShellQuote(std::string_view word, bool first_word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), [first_word](char ch) {
        return IsSafeInShell(ch, first_word);
      })) {
    return std::string(word);
  }
  // Inside single quotes nothing is special but the quote itself, which
  // closes the quotes, is written escaped, and opens them again: '\''.
  std::string out = "'";
  for (char ch : word) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  out += "'";
  return out;
}

}  // namespace

std::string ShellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ' ';
    out += ShellQuote(words[i], i == 0);
  }
  return out;
}

Result<Submission> ParseSubmit(const std::vector<std::string>& args, std::string_view script_text,
                               std::string_view script_path) {
  Submission sub;
  Request request;
  std::vector<std::string> rest;
  Request command_line;
  SHOAL_RETURN_IF_ERROR(ReadOptions(args, Source::kCommandLine, command_line, rest, sub.notes));
  const bool has_script = !script_text.empty();
  bool script_has_command = false;
  if (has_script) {
    SHOAL_ASSIGN_OR_RETURN(ScriptOptions script,
                           ReadDirectives(script_text, script_path, sub.notes));
    request = std::move(script.request);
    script_has_command = script.has_command;
  }
  Overlay(command_line, request);
  SHOAL_RETURN_IF_ERROR(Resolve(request, sub.spec));
  if (!request.ignored.empty()) {
    if (request.strict.value_or(false)) {
      return InvalidArgument(fmt::format("--strict: these options have no meaning in Shoal: {}",
                                         Join(request.ignored, " ")));
    }
    for (const std::string& o : request.ignored)
      sub.notes.push_back(fmt::format("{}: accepted; it has no meaning in Shoal", o));
  }
  if (request.exported) {
    sub.export_all = request.exported->all;
    sub.export_names = request.exported->names;
  }
  sub.export_file = request.export_file.value_or("");
  sub.parsable = request.parsable.value_or(false);
  sub.wait = request.wait.value_or(false);
  sub.test_only = request.test_only.value_or(false);

  if (has_script) {
    const std::string where = script_path.empty() ? "the batch script" : std::string(script_path);
    if (command_line.wrap) return InvalidArgument("give either --wrap or a batch script, not both");
    // As sbatch: the words after the script are its arguments, options or not.
    if (rest.size() > 1) {
      sub.spec.script_args.assign(rest.begin() + 1, rest.end());
      if (StartsWith(rest[1], "-")) {
        sub.notes.push_back(
            fmt::format("'{}' comes after {}: it is the script's argument, as sbatch takes it "
                        "(options go before the script)",
                        rest[1], where));
      }
    }
    if (!script_has_command) {
      return InvalidArgument(
          fmt::format("{} runs no command: it holds only comments and directives", where));
    }
    sub.spec.command = std::string(script_text);
    sub.spec.script = true;
  } else if (command_line.wrap) {
    if (!rest.empty()) {
      return InvalidArgument("give either --wrap or a command after the options, not both");
    }
    // As sbatch: the command becomes a batch script, run once.
    sub.spec.command = "#!/bin/sh\n" + *command_line.wrap + "\n";
    sub.spec.script = true;
  } else if (!rest.empty()) {
    if (rest[0].empty()) return InvalidArgument("the command is an empty word");
    sub.spec.command = ShellJoin(rest);
    sub.spec.argv = rest;
    sub.spec.script = false;
  } else {
    return InvalidArgument(
        "nothing to run: give a batch script, --wrap=CMD, or a command after the options");
  }
  // Unnamed jobs are named as Slurm names them: after the script, "wrap",
  // or the command's program.
  if (sub.spec.name.empty()) {
    std::string_view base = has_script          ? script_path
                            : command_line.wrap ? "wrap"
                                                : std::string_view(rest[0]);
    if (size_t slash = base.rfind('/'); slash != std::string_view::npos)
      base.remove_prefix(slash + 1);
    sub.spec.name = base.empty() ? "script" : std::string(base);
  }
  SHOAL_RETURN_IF_ERROR(sub.spec.Validate());
  return sub;
}

Status ApplyScriptDirectives(std::string_view script_text, std::string_view script_path,
                             JobSpec& spec, std::vector<std::string>& notes) {
  SHOAL_ASSIGN_OR_RETURN(ScriptOptions script, ReadDirectives(script_text, script_path, notes));
  return Resolve(script.request, spec);
}

Status ApplyOption(std::string_view name, std::string_view value, JobSpec& spec,
                   std::vector<std::string>& notes) {
  std::string_view option = name;
  std::optional<std::string_view> given;
  if (!value.empty()) given = value;
  const bool is_long = StartsWith(name, "--");
  const size_t eq = name.find('=');
  const bool attached = is_long ? eq != std::string_view::npos : name.size() > 2 && name[0] == '-';
  if (attached) {
    if (given) return InvalidArgument(fmt::format("{}: give the value once", name));
    option = is_long ? name.substr(0, eq) : name.substr(0, 2);
    given = is_long ? name.substr(eq + 1) : name.substr(2);
  }
  Request request;
  SHOAL_RETURN_IF_ERROR(ReadOption(option, given, Source::kCommandLine, request, notes));
  return Resolve(request, spec);
}

Result<size_t> CommandStart(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return i + 1;
    if (word.size() < 2 || word[0] != '-') return i;
    // Only the spelling matters here, and that the option exists (so that
    // the word after an unknown one is not taken for the script): values are
    // ParseSubmit's to judge.
    const bool attached =
        StartsWith(word, "--") ? word.find('=') != std::string::npos : word.size() > 2;
    const std::string_view name =
        std::string_view(word).substr(0, StartsWith(word, "--") ? word.find('=') : 2);
    SHOAL_RETURN_IF_ERROR(CheckOptionName(name));
    if (attached || !TakesValue(word)) continue;
    if (i + 1 >= args.size()) return InvalidArgument(fmt::format("{} needs a value", word));
    ++i;
  }
  return args.size();
}

std::string_view OptionNotes() {
  return R"(Values: --opt=VALUE or --opt VALUE, -X VALUE or -XVALUE (Slurm's spelling).
The same options work in a batch script on lines that start with #SHOAL or #SBATCH, before
the first command. Options on the command line override #SHOAL lines, which override
#SBATCH lines. sbatch options without a meaning in Shoal (--hint, --mail-type, ...) are
accepted with a note; --strict refuses them. Any other option is an error.
CPUs: a task gets -c CPUs (1 without -c); a node gets its tasks' CPUs (-n spread evenly
over -N nodes, or --ntasks-per-node). With --gpus and no -N the CPUs go with the GPUs.
)";
}

}  // namespace shoal::submit
