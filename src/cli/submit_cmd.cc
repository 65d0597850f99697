// `shoal submit` (sbatch): the words split between Shoal's client flags and
// sbatch's options, the script read, the environment exported, the job sent,
// and with --wait, its end awaited.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/app.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/json_fields.h"
#include "core/hostlist.h"
#include "core/job.h"
#include "core/strings.h"
#include "submit/submit.h"

namespace shoal::cli {

namespace {

using api::Json;

constexpr std::string_view kSubmit = "shoal submit";

// Splits `shoal submit`'s words, in order: the options of `app` (the client
// flags, --help) with their values go to `own`; sbatch's options with their
// values, then the script or command from the first other word (or from
// "--") on, go to `rest`, for submit::ParseSubmit. A value is never taken for
// an option: `-J --json` names the job "--json".
Status SplitSubmitArgs(const CLI::App& app, const std::vector<std::string>& raw,
                       std::vector<std::string>& own, std::vector<std::string>& rest) {
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string& word = raw[i];
    if (word == "--" || word.size() < 2 || word[0] != '-') {
      rest.insert(rest.end(), raw.begin() + static_cast<std::ptrdiff_t>(i), raw.end());
      break;
    }
    const bool is_long = StartsWith(word, "--");
    const size_t eq = is_long ? word.find('=') : std::string::npos;
    const std::string name = is_long ? word.substr(0, eq) : word.substr(0, 2);
    const bool attached = is_long ? eq != std::string::npos : word.size() > 2;
    const CLI::Option* client_option = app.get_option_no_throw(name);
    const bool takes_value = client_option != nullptr ? client_option->get_items_expected_max() > 0
                                                      : submit::TakesValue(name);
    std::vector<std::string>& to = client_option != nullptr ? own : rest;
    to.push_back(word);
    if (attached || !takes_value) continue;
    if (i + 1 >= raw.size()) return InvalidArgument(fmt::format("{} needs a value", name));
    to.push_back(raw[++i]);
  }
  return Status::Ok();
}

// Adds the table of sbatch options to `app`, for its help only: they are
// parsed by submit::ParseSubmit, which reads #SBATCH lines with the same
// table. Done only for --help, to keep `shoal submit` cheap.
void DescribeSubmitOptions(CLI::App& app) {
  app.add_option("SCRIPT|COMMAND",
                 "a batch script (its first line starts with #!), or a "
                 "command and its arguments; none with --wrap");
  for (const submit::OptionInfo& o : submit::OptionList()) {
    std::string names = fmt::format("--{}", o.long_name);
    if (o.short_name != 0) names = fmt::format("-{},{}", o.short_name, names);
    CLI::Option* option = o.value_name.empty()
                              ? app.add_flag(names)
                              : app.add_option(names)->type_name(std::string(o.value_name));
    option->description(std::string(o.help));
  }
  app.footer(std::string(submit::OptionNotes()));
}

bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (std::string_view dir : Split(path, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

// What the job takes from the submitting shell (--export, --export-file):
// all its variables, or the names given, without those that belong to this
// shell or process alone or that Shoal sets in the job itself.
Status ExportEnvironment(const submit::Submission& sub, JobSpec& spec) {
  auto own = [](std::string_view k) {
    return k == "_" || k == "PWD" || k == "OLDPWD" || k == "SHLVL" || k == "SHOAL_TOKEN" ||
           k == "SHOAL_TOKEN_FILE" || k == "SHOAL_JOB_TOKEN" || k.starts_with("SLURM_") ||
           k.starts_with("SHOAL_JOB_") || k.starts_with("SHOAL_STEP_") ||
           k == "CUDA_VISIBLE_DEVICES";
  };
  std::map<std::string, std::string> env;
  for (char** e = ::environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    const std::string key(kv.substr(0, eq));
    if (own(key)) continue;
    if (sub.export_all || std::find(sub.export_names.begin(), sub.export_names.end(), key) !=
                              sub.export_names.end()) {
      env[key] = std::string(kv.substr(eq + 1));
    }
  }
  if (!sub.export_file.empty()) {
    std::ifstream in(sub.export_file);
    if (!in)
      return InvalidArgument(fmt::format("--export-file {}: cannot read it", sub.export_file));
    std::stringstream all;
    all << in.rdbuf();
    const std::string text = all.str();
    const char sep = text.find('\0') != std::string::npos ? '\0' : '\n';
    for (std::string_view line : Split(text, sep)) {
      const size_t eq = line.find('=');
      if (Trim(line).empty()) continue;
      if (eq == std::string_view::npos || eq == 0)
        return InvalidArgument(fmt::format("--export-file {}: '{}' is not NAME=value",
                                           sub.export_file, line.substr(0, 80)));
      env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
  }
  for (const auto& [k, v] : spec.env)
    env[k] = v;  // NAME=value of --export win
  spec.env = std::move(env);
  Status valid = spec.Validate();
  if (!valid.ok() && valid.message().find("environment") != std::string::npos) {
    return InvalidArgument(valid.message() +
                           " (your shell's variables go with the job: --export=NONE, or "
                           "--export=NAME,... for some of them)");
  }
  return Status::Ok();
}

// Waits for `id` to end (sbatch --wait) and returns its exit code for this
// process: the job's own, 1 when it ended without completing and without one.
int WaitForJob(ApiClient& c, uint64_t id) {
  for (int polls = 0;; ++polls) {
    auto r = c.Get(fmt::format("/v1/jobs/{}", id));
    if (!r.ok()) return Fail("submit", r.status());
    const std::string state = Str(*r, "state");
    if (state != "pending" && state != "running") {
      const int code = static_cast<int>(Num(*r, "exit_code"));
      const int signal = static_cast<int>(Num(*r, "exit_signal"));
      if (state != "completed")
        std::fprintf(stderr, "shoal submit: job %llu %s\n", static_cast<unsigned long long>(id),
                     state.c_str());
      if (code != 0) return code;
      if (signal != 0) return 128 + signal;
      return state == "completed" ? 0 : 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(polls < 50 ? 100 : 1000));
  }
}

// The batch script that `args` (sbatch options first) name, if any: its text
// and path, both empty when the first word after the options is a command.
Status ReadScript(const std::vector<std::string>& args, std::string& text, std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(const size_t start, submit::CommandStart(args));
  const bool wrapped =
      std::any_of(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(start),
                  [](const std::string& a) { return a == "--wrap" || StartsWith(a, "--wrap="); });
  if (wrapped || start >= args.size()) return Status::Ok();
  std::error_code ec;
  const std::filesystem::path p = args[start];
  // After "--" the words are a command (Shoal's own: `shoal submit -G1 --
  // python3 train.py` runs it as the job's tasks).
  if (start > 0 && args[start - 1] == "--") return Status::Ok();
  // Otherwise, as sbatch: a batch script, whose first line starts with "#!";
  // or a program on PATH, run as the job's command.
  if (!std::filesystem::is_regular_file(p, ec)) {
    const std::string& word = args[start];
    const bool looks_like_a_path = word.find('/') != std::string::npos || word.ends_with(".sh") ||
                                   word.ends_with(".sbatch") || word.ends_with(".slurm") ||
                                   word.ends_with(".bash");
    if (looks_like_a_path || !OnPath(word)) {
      return InvalidArgument(fmt::format(
          "{}: no such batch script{}", word,
          looks_like_a_path ? ""
                            : " (nor a program on PATH; to run a command: shoal submit -- CMD)"));
    }
    return Status::Ok();
  }
  std::ifstream probe(p);
  char head[2] = {0, 0};
  if (!probe.read(head, 2) || head[0] != '#' || head[1] != '!') {
    return InvalidArgument(fmt::format(
        "{} does not look like a batch script: its first line must start with #! and the path "
        "of an interpreter (as sbatch requires); to run it as a command: shoal submit -- {}",
        p.string(), p.string()));
  }
  if (std::filesystem::file_size(p, ec) > (4 << 20)) {
    return InvalidArgument(fmt::format("{} is larger than 4 MiB", p.string()));
  }
  std::ifstream in(p);
  std::stringstream all;
  all << in.rdbuf();
  text = all.str();
  path = p.string();
  return Status::Ok();
}

// sbatch --test-only: asks the server when and where the job would start
// and prints it as sbatch does (on stderr, the time in local time), with
// what the estimate leaves out; nothing is submitted.
int TestOnly(ApiClient& c, const JobSpec& spec, bool json) {
  auto r = c.Post("/v1/jobs?test_only=true", api::ToJson(spec));
  if (!r.ok()) return Fail("submit", r.status());
  if (json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kExitOk;
  }
  std::vector<std::string> nodes;
  for (const Json& n : (*r)["nodes"])
    nodes.push_back(n.get<std::string>());
  const std::string when = LocalTime(Num(*r, "start_time"));
  std::fprintf(stderr,
               "sbatch: Job %llu to start at %s using %lld processors on nodes %s in partition "
               "%s\n",
               static_cast<unsigned long long>(Num(*r, "job")), when.c_str(),
               static_cast<long long>(Num(*r, "cpus")), CompressHostList(nodes).c_str(),
               Str(*r, "partition").c_str());
  std::fprintf(stderr,
               "shoal submit: note: --test-only counts the running jobs' time limits, not the "
               "other pending jobs, holds, dependencies, QoS limits or reservations; nothing was "
               "submitted\n");
  return kExitOk;
}

}  // namespace

int RunSubmit(const std::vector<std::string>& raw) {
  ClientFlags flags;
  CLI::App app{"Submit a job: a batch script, --wrap=COMMAND, or a command and its arguments.",
               std::string(kSubmit)};
  AddClientFlags(app, flags);
  std::vector<std::string> own, args;
  if (Status s = SplitSubmitArgs(app, raw, own, args); !s.ok()) {
    return UsageError(kSubmit, s.message());
  }
  if (std::any_of(own.begin(), own.end(),
                  [](const std::string& a) { return a == "-h" || a == "--help"; })) {
    DescribeSubmitOptions(app);
  }
  if (int code = ParseApp(app, own, kSubmit); code >= 0) return code;
  std::string script_text, script_path;
  if (Status s = ReadScript(args, script_text, script_path); !s.ok()) {
    return UsageError(kSubmit, s.message());
  }
  auto parsed = submit::ParseSubmit(args, script_text, script_path);
  if (!parsed.ok()) return UsageError(kSubmit, parsed.status().message());
  for (const std::string& note : parsed->notes)
    std::fprintf(stderr, "shoal submit: note: %s\n", note.c_str());
  JobSpec& spec = parsed->spec;
  std::error_code ec;
  spec.submit_dir = std::filesystem::current_path(ec).string();
  // As sbatch: a relative -D is from the submitting directory.
  if (spec.work_dir.empty()) {
    spec.work_dir = spec.submit_dir;
  } else if (spec.work_dir.front() != '/') {
    spec.work_dir =
        (std::filesystem::path(spec.submit_dir) / spec.work_dir).lexically_normal().string();
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) spec.submit_host = host;
  if (Status s = ExportEnvironment(*parsed, spec); !s.ok()) return UsageError(kSubmit, s.message());
  auto client = ApiClient::Open(flags);
  if (!client.ok()) return Fail("submit", client.status());
  if (parsed->test_only) return TestOnly(*client, spec, flags.json);
  auto r = client->Post("/v1/jobs", api::ToJson(spec));
  if (!r.ok()) return Fail("submit", r.status());
  const uint64_t first = (*r)["jobs"][0].get<uint64_t>();
  if (auto notes = r->find("notes"); notes != r->end() && notes->is_array()) {
    for (const Json& note : *notes) {
      if (note.is_string())
        std::fprintf(stderr, "shoal submit: note: %s\n", note.get<std::string>().c_str());
    }
  }
  if (parsed->parsable) {
    std::printf("%s\n", r->contains("array_job_id") ? Str(*r, "array_job_id").c_str()
                                                    : std::to_string(first).c_str());
  } else if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
  } else if (r->contains("array_job_id")) {
    const Json& ids = (*r)["jobs"];
    std::printf("Submitted job array %s (jobs %s-%s)\n", Str(*r, "array_job_id").c_str(),
                ids.front().dump().c_str(), ids.back().dump().c_str());
  } else {
    std::printf("Submitted job %s\n", (*r)["jobs"][0].dump().c_str());
  }
  std::fflush(stdout);
  if (parsed->wait) return WaitForJob(*client, first);
  return kExitOk;
}

}  // namespace shoal::cli
