#include "submit/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "core/cluster.h"
#include "core/hostlist.h"
#include "core/strings.h"
#include "submit/option_values.h"
#include "submit/submit.h"

namespace shoal::submit {

namespace {

using Handler = Status (*)(const Call& c, Request& r, std::vector<std::string>& notes);

struct OptionDef {
  std::string_view long_name;   // without the leading "--"
  char short_name;              // 0: none
  std::string_view value_name;  // empty: a flag
  std::string_view help;
  Handler apply;
};

// The options, in the order the help lists them.
constexpr OptionDef kOptions[] = {
    {"job-name", 'J', "NAME", "the job's name",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/true));
       r.name = std::string(c.value);
       return Status::Ok();
     }},
    {"partition", 'p', "NAME", "the partition (default: the cluster's default partition)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       if (c.value.find(',') != std::string_view::npos) {
         return Invalid(c, "Shoal takes one partition, not a list");
       }
       r.partition = std::string(c.value);
       return Status::Ok();
     }},
    {"account", 'A', "NAME", "the account to charge",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       r.account = std::string(c.value);
       return Status::Ok();
     }},
    {"qos", 'q', "NAME", "the quality of service (shoal qos list)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       r.qos = std::string(c.value);
       return Status::Ok();
     }},
    {"reservation", 0, "NAME", "run in this reservation (shoal reservation list)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       r.reservation = std::string(c.value);
       return Status::Ok();
     }},
    {"time", 't', "LIMIT", "MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S, or 90s, 45m, 2h, 3d",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       const std::string lower = ToLower(Trim(c.value));
       if (lower == "unlimited" || lower == "infinite") {
         return Invalid(
             c, "Shoal needs a finite limit (leave --time out for the partition's default)");
       }
       if (HasLongNumber(c.value, kMaxNumberDigits)) return Invalid(c, "too long");
       auto d = ParseDuration(c.value);
       if (!d.ok()) return Invalid(c, d.status().message());
       if (d->count() <= 0) {
         return Invalid(c, "must be more than 0 (leave --time out for the partition's default)");
       }
       if (*d > kMaxTimeLimit) return Invalid(c, "more than 365 days");
       r.time_limit = *d;
       return Status::Ok();
     }},
    {"nodes", 'N', "N", "nodes: one number (default 1, or as many as --gpus needs)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       std::string_view text = Trim(c.value);
       const size_t dash = text.find('-', 1);
       if (dash != std::string_view::npos) {
         // "2-2" is one number written as a range; a real range asks the
         // scheduler to choose a size, which Shoal does not do.
         auto lo = ParseInt(text.substr(0, dash));
         auto hi = ParseInt(text.substr(dash + 1));
         if (!lo.ok() || !hi.ok() || *lo != *hi) {
           return Invalid(c, "node ranges (MIN-MAX) are not supported; give one number of nodes");
         }
         text = text.substr(0, dash);
       }
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, text, 1, kMaxNodes, "the number of nodes"));
       r.nodes = static_cast<int>(n);
       return Status::Ok();
     }},
    {"ntasks", 'n', "N", "tasks over all nodes (default: one per node)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxTasks, "the number of tasks"));
       r.tasks = static_cast<int>(n);
       return Status::Ok();
     }},
    {"ntasks-per-node", 0, "N", "tasks on each node (needs a known node count)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxCpus, "tasks per node"));
       r.tasks_per_node = static_cast<int>(n);
       return Status::Ok();
     }},
    {"cpus-per-task", 'c', "N", "CPUs for each task (1 when tasks are given without it)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxCpus, "CPUs per task"));
       return SetGroup(c, r.cpu, CpuRequest{false, static_cast<int>(n), ""}, "CPUs");
     }},
    {"gpus", 'G', "[TYPE:]N", "GPUs in total, over as few nodes as hold them unless -N is given",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(GpuRequest g, ParseGpuCount(c, /*per_node=*/false));
       return SetGroup(c, r.gpu, std::move(g), "GPUs");
     }},
    {"gpus-per-node", 0, "[TYPE:]N", "GPUs on each node",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(GpuRequest g, ParseGpuCount(c, /*per_node=*/true));
       return SetGroup(c, r.gpu, std::move(g), "GPUs");
     }},
    {"gres", 0, "gpu[:TYPE][:N]", "GPUs on each node (N is 1 when left out)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(GpuRequest g, ParseGres(c));
       return SetGroup(c, r.gpu, std::move(g), "GPUs");
     }},
    {"gpu-share", 0, "MILLI",
     "Shoal's own: thousandths of each GPU, 1..1000 (below 1000 it is shared)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMilliPerGpu, "the GPU share"));
       r.gpu_milli = static_cast<int>(n);
       return Status::Ok();
     }},
    {"cpus-per-gpu", 0, "N", "CPUs for each GPU (instead of -c)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxCpus, "CPUs per GPU"));
       return SetGroup(c, r.cpu, CpuRequest{true, static_cast<int>(n), ""}, "CPUs");
     }},
    {"mem", 0, "SIZE",
     "memory on each node: 512 (MiB), 16384M, 80G, 1T; 0: all of it (whole nodes)",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       SHOAL_ASSIGN_OR_RETURN(int64_t mib, ParseMemory(c));
       if (mib == 0) {
         notes.push_back(fmt::format(
             "{}: all of each node's memory; Shoal gives the job whole nodes (--exclusive)",
             c.Shown()));
       }
       return SetGroup(c, r.mem, MemRequest{false, false, mib == 0, mib, ""}, "memory");
     }},
    {"mem-per-gpu", 0, "SIZE", "memory for each GPU (instead of --mem)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t mib, ParseMemory(c));
       return SetGroup(c, r.mem, MemRequest{true, false, false, mib, ""}, "memory");
     }},
    {"constraint", 'C', "L1&L2|L3",
     "node labels the job needs, joined with & or ,; a|b: either; [a*2&b*4]: node counts",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.constraints, ParseConstraint(c));
       return Status::Ok();
     }},
    {"nodelist", 'w', "HOSTS", "run on these nodes, all of them: n[01-04],m1",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.node_list, ParseNodeNames(c));
       return Status::Ok();
     }},
    {"exclude", 'x', "HOSTS", "never on these nodes: n[05-06]",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.exclude, ParseNodeNames(c));
       return Status::Ok();
     }},
    {"signal", 0, "[B:]SIG[@T]",
     "send SIG T seconds (default 60) before the time limit: to the job's steps, or with B: "
     "to the batch shell only",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.signal, ParseSignalOption(c));
       return Status::Ok();
     }},
    {"exclusive", 0, "", "whole nodes, shared with nobody",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.exclusive = true;
       return Status::Ok();
     }},
    {"array", 'a', "SPEC", "a job array: 0-99%10, 1,3,5 or 0-15:4",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (HasLongNumber(c.value, kMaxNumberDigits)) return Invalid(c, "index too large");
       auto a = ParseArraySpec(c.value);
       if (!a.ok()) return Invalid(c, a.status().message());
       r.array = *std::move(a);
       return Status::Ok();
     }},
    {"dependency", 'd', "LIST",
     "after:ID[:ID...], afterok:..., afterany:..., afternotok:..., singleton; joined with , (all "
     "of) or ? (any of)",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       auto deps = ParseDependencies(c.value);
       if (!deps.ok()) return Invalid(c, deps.status().message());
       if (deps->any && c.value.find(',') != std::string_view::npos) {
         notes.push_back(fmt::format(
             "{}: with a ? every dependency is an alternative, those joined with , too (as "
             "Slurm 22.05 reads it)",
             c.Shown()));
       }
       if (deps->deps.size() > kMaxDependencies) {
         return Invalid(c, fmt::format("more than {} dependencies", kMaxDependencies));
       }
       r.dependencies = *std::move(deps);
       return Status::Ok();
     }},
    {"hold", 'H', "", "submit the job held: it waits until released",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.hold = true;
       return Status::Ok();
     }},
    {"begin", 0, "TIME", "not before TIME: Unix seconds, or YYYY-MM-DD[THH:MM[:SS]] in UTC",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       SHOAL_ASSIGN_OR_RETURN(r.begin_time, ParseBegin(c, notes));
       return Status::Ok();
     }},
    {"requeue", 0, "", "may be requeued after preemption or a node failure",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.requeue = true;
       return Status::Ok();
     }},
    {"no-requeue", 0, "", "may not be requeued (the default)",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.requeue = false;
       return Status::Ok();
     }},
    {"chdir", 'D', "DIR", "the working directory",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.work_dir = std::string(c.value);
       return Status::Ok();
     }},
    {"output", 'o', "PATH", "the standard output file",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.stdout_path = std::string(c.value);
       return Status::Ok();
     }},
    {"error", 'e', "PATH", "the standard error file",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.stderr_path = std::string(c.value);
       return Status::Ok();
     }},
    {"export", 0, "LIST",
     "which of your shell's variables the job gets: ALL (the default), NONE, or "
     "NAME[,NAME...]; NAME=value sets one",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.exported, ParseExport(c));
       return Status::Ok();
     }},
    {"export-file", 0, "FILE", "more variables for the job: NAME=value lines (or NUL-separated)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.export_file = std::string(c.value);
       return Status::Ok();
     }},
    {"get-user-env", 0, "",
     "accepted: jobs run with their user's login variables (PATH, HOME, "
     "SHELL, ...) under what --export carries",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       r.get_user_env = true;
       notes.push_back(
           fmt::format("{}: the job gets its user's login variables, not the output "
                       "of a login shell",
                       c.Shown()));
       return Status::Ok();
     }},
    {"gpus-per-task", 0, "N", "GPUs for each task (-n tasks x N in all); each task sees its own",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxGpusPerNode, "GPUs per task"));
       r.gpus_per_task = static_cast<int>(n);
       return Status::Ok();
     }},
    {"ntasks-per-gpu", 0, "N", "tasks for each GPU (instead of -n)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxTasksPerNode, "tasks per GPU"));
       r.tasks_per_gpu = static_cast<int>(n);
       return Status::Ok();
     }},
    {"mem-per-cpu", 0, "SIZE", "memory for each CPU (instead of --mem)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t mib, ParseMemory(c));
       return SetGroup(c, r.mem, MemRequest{false, true, false, mib, ""}, "memory");
     }},
    {"gpu-speed", 0, "MODEL=X,...",
     "Shoal's own: how fast the job runs on each GPU model, e.g. h100=1,a100=0.55 (ratios); "
     "speed-aware policies run it where it ends soonest, only on these models. Without it: "
     "the speeds learned from earlier runs of the job's name that wrote $SHOAL_PROGRESS_FILE, "
     "else the GPUs' catalogue peaks",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       std::vector<std::pair<std::string, double>> speeds;
       for (std::string_view item : Split(c.value, ',')) {
         auto speed = ParseNamedNumber(item);
         if (!speed || !(speed->second > 0) || speed->second > 1e6) {
           return Invalid(c, fmt::format("'{}' is not MODEL=SPEED with a speed above 0 "
                                         "(e.g. h100=1,a100=0.55)",
                                         Printable(item)));
         }
         speeds.push_back(std::move(*speed));
       }
       r.gpu_speeds = std::move(speeds);
       return Status::Ok();
     }},
    {"gpu-power-cap", 0, "WATTS",
     "Shoal's own: hold each of the job's GPUs to this power (e.g. 500W) while it runs; "
     "power budgets count the cap",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       std::string_view text = Trim(c.value);
       if (!text.empty() && (text.back() == 'W' || text.back() == 'w')) text.remove_suffix(1);
       auto watts = ParseInt(text);
       if (!watts.ok() || *watts < kMinGpuPowerCapW || *watts > kMaxGpuPowerCapW) {
         return Invalid(c, fmt::format("'{}' is not a power in watts from {} to {} (e.g. 500W)",
                                       Printable(c.value), kMinGpuPowerCapW, kMaxGpuPowerCapW));
       }
       r.gpu_power_cap_w = static_cast<int>(*watts);
       return Status::Ok();
     }},
    {"container-image", 0, "IMAGE",
     "run the job's tasks in this OCI image: a file on the nodes, or a name in their image "
     "folder (pyxis' option; docs/containers.md)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, 1024, /*allow_spaces=*/false));
       r.container_image = std::string(Trim(c.value));
       return Status::Ok();
     }},
    {"container-mounts", 0, "SRC:DST[:ro],...",
     "bind these node paths into the container (the job's user must reach each)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       auto mounts = ParseContainerMounts(c.value);
       if (!mounts.ok()) return Invalid(c, mounts.status().message());
       r.container_mounts = std::move(*mounts);
       return Status::Ok();
     }},
    {"container-workdir", 0, "PATH",
     "the tasks' working folder in the container (default: the job's, mounted)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/false));
       r.container_workdir = std::string(c.value);
       return Status::Ok();
     }},
    {"container-env", 0, "NAME[,NAME...]",
     "variables whose job values win over the image's own (else the image's win)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       r.container_env = ParseContainerEnv(c.value);
       return Status::Ok();
     }},
    {"container-mount-home", 0, "", "mount the user's home folder in the container (the default)",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.container_mount_home = true;
       return Status::Ok();
     }},
    {"no-container-mount-home", 0, "", "do not mount the user's home folder in the container",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.container_mount_home = false;
       return Status::Ok();
     }},
    {"comment", 0, "TEXT", "a comment kept with the job",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.comment = std::string(c.value);
       return Status::Ok();
     }},
    {"open-mode", 0, "MODE", "truncate (the default) or append the output files",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       const std::string mode = ToLower(Trim(c.value));
       if (mode != "append" && mode != "truncate") return Invalid(c, "append or truncate");
       r.append_output = mode == "append";
       return Status::Ok();
     }},
    {"strict", 0, "", "Shoal's own: refuse Slurm options that have no meaning in Shoal",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective)
         return Invalid(c, "--strict belongs on the command line");
       r.strict = true;
       return Status::Ok();
     }},
    {"parsable", 0, "", "print only the job's id (as sbatch --parsable)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective) return Status::Ok();
       r.parsable = true;
       return Status::Ok();
     }},
    {"test-only", 0, "",
     "check the job and say when and where it would start (counting the running jobs, not "
     "the other pending ones), without submitting it",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.test_only = true;
       return Status::Ok();
     }},
    {"wait", 'W', "", "wait for the job to end; exit with its exit code",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective) return Status::Ok();
       r.wait = true;
       return Status::Ok();
     }},
    {"wrap", 0, "CMD", "run the shell command CMD instead of a script or a command",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective) {
         return Invalid(c, "--wrap belongs on the command line, not in a script");
       }
       if (Trim(c.value).empty()) return Invalid(c, "an empty command");
       r.wrap = std::string(c.value);
       return Status::Ok();
     }},
    {"mail-user", 0, "ADDRESS", "where mail about the job goes (default: the job's user)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       const std::string_view v = Trim(c.value);
       // An address, never an option of the mail program or a second header.
       const bool ok =
           !v.empty() && v.front() != '-' && std::all_of(v.begin(), v.end(), [](char ch) {
             return std::isalnum(static_cast<unsigned char>(ch)) ||
                    std::string_view("@._%+-").find(ch) != std::string_view::npos;
           });
       if (!ok) return Invalid(c, "not a mail address (letters, digits and @._%+-)");
       r.mail_user = std::string(v);
       return Status::Ok();
     }},
    {"mail-type", 0, "TYPES",
     "mail the user at BEGIN, END, FAIL, REQUEUE, ALL, TIME_LIMIT[_90|_80|_50], ARRAY_TASKS "
     "(sent by the server's mail program)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       auto types = ParseMailTypes(c.value);
       if (!types.ok()) return Invalid(c, types.status().message());
       r.mail_types = *types;
       return Status::Ok();
     }},
};

// Slurm options with a Shoal way to say the same thing.
struct Hint {
  std::string_view name;
  std::string_view hint;
};
constexpr Hint kHints[] = {
    {"--nodefile", "give the node names with --nodelist"},
    {"-F", "give the node names with --nodelist"},
    {"--input", "a Shoal batch script reads no standard input; redirect inside it (< FILE)"},
    {"-i", "a Shoal batch script reads no standard input; redirect inside it (< FILE)"},
};

// sbatch's options that have no meaning in Shoal (Slurm 22.05's `sbatch
// --help`, and --hint, --ntasks-per-core, ...): accepted with a note, so
// that existing scripts run; `--strict` refuses them.
struct SlurmOnly {
  std::string_view long_name;
  char short_name;
  bool takes_value;
};
constexpr SlurmOnly kSlurmOnly[] = {
    {"acctg-freq", 0, true},
    {"batch", 0, true},
    {"bb", 0, true},
    {"bbf", 0, true},
    {"cluster-constraint", 0, true},
    {"clusters", 'M', true},
    {"container", 0, true},
    {"contiguous", 0, false},
    {"core-spec", 'S', true},
    {"cores-per-socket", 0, true},
    {"cpu-bind", 0, true},
    {"cpu-freq", 0, true},
    {"deadline", 0, true},
    {"delay-boot", 0, true},
    {"distribution", 'm', true},
    {"extra-node-info", 'B', true},
    {"gid", 0, true},
    {"gpu-bind", 0, true},
    {"gpu-freq", 0, true},
    {"gpus-per-socket", 0, true},
    {"gres-flags", 0, true},
    {"hint", 0, true},
    {"ignore-pbs", 0, false},
    {"kill-on-invalid-dep", 0, true},
    {"licenses", 'L', true},
    {"mcs-label", 0, true},
    {"mem-bind", 0, true},
    {"mincpus", 0, true},
    {"network", 0, true},
    {"nice", 0, true},
    {"no-kill", 'k', false},
    {"ntasks-per-core", 0, true},
    {"ntasks-per-socket", 0, true},
    {"overcommit", 'O', false},
    {"oversubscribe", 's', false},
    {"power", 0, true},
    {"priority", 0, true},
    {"profile", 0, true},
    {"propagate", 0, true},
    {"quiet", 'Q', false},
    {"reboot", 0, false},
    {"sockets-per-node", 0, true},
    {"spread-job", 0, false},
    {"switches", 0, true},
    {"thread-spec", 0, true},
    {"threads-per-core", 0, true},
    {"time-min", 0, true},
    {"tmp", 0, true},
    {"uid", 0, true},
    {"use-min-nodes", 0, false},
    {"verbose", 'v', false},
    {"wait-all-nodes", 0, true},
    {"wckey", 0, true},
};

// Other names sbatch takes for options (slurm_opt.c).
struct Alias {
  std::string_view name;
  std::string_view long_name;
};
constexpr Alias kAliases[] = {
    {"tasks-per-node", "ntasks-per-node"},
};

// Every long name `given` (without "--") could stand for, as getopt_long
// reads sbatch's options: the one it names exactly (or through an alias),
// else every option it is a prefix of. One answer is the option; more are
// an ambiguous abbreviation.
std::vector<std::string_view> LongNames(std::string_view given) {
  std::vector<std::string_view> all;
  for (const OptionDef& d : kOptions)
    all.push_back(d.long_name);
  for (const SlurmOnly& o : kSlurmOnly)
    all.push_back(o.long_name);
  for (const Alias& a : kAliases) {
    if (a.name == given) return {a.long_name};
  }
  if (std::find(all.begin(), all.end(), given) != all.end()) return {given};
  std::vector<std::string_view> matches;
  if (given.empty()) return matches;
  for (std::string_view name : all) {
    if (StartsWith(name, given)) matches.push_back(name);
  }
  for (const Alias& a : kAliases) {
    if (StartsWith(a.name, given) &&
        std::find(matches.begin(), matches.end(), a.long_name) == matches.end())
      matches.push_back(a.long_name);
  }
  return matches;
}

// The long name a word's "--name" stands for; empty when none or ambiguous.
std::string_view LongNameOf(std::string_view word) {
  const std::vector<std::string_view> names = LongNames(word.substr(2));
  return names.size() == 1 ? names.front() : std::string_view();
}

const OptionDef* FindOption(std::string_view name) {
  if (StartsWith(name, "--")) {
    const std::string_view long_name = LongNameOf(name);
    for (const OptionDef& d : kOptions) {
      if (!long_name.empty() && d.long_name == long_name) return &d;
    }
    return nullptr;
  }
  if (name.size() == 2 && name[0] == '-') {
    for (const OptionDef& d : kOptions) {
      if (d.short_name != 0 && d.short_name == name[1]) return &d;
    }
  }
  return nullptr;
}

const SlurmOnly* FindSlurmOnly(std::string_view name) {
  const bool long_form = StartsWith(name, "--");
  const std::string_view long_name = long_form ? LongNameOf(name) : std::string_view();
  for (const SlurmOnly& o : kSlurmOnly) {
    if (long_form ? (!long_name.empty() && long_name == o.long_name)
                  : (name.size() == 2 && o.short_name != 0 && name[1] == o.short_name))
      return &o;
  }
  return nullptr;
}

Status UnknownOption(std::string_view name) {
  const std::string shown = Printable(name);
  for (const Hint& h : kHints) {
    if (h.name == name) {
      return InvalidArgument(fmt::format("option {} has no meaning in Shoal: {}", shown, h.hint));
    }
  }
  if (StartsWith(name, "--") && name.size() > 2 && name.size() <= 40) {
    const std::vector<std::string_view> could_be = LongNames(name.substr(2));
    if (could_be.size() > 1) {
      std::vector<std::string> shown_names;
      for (std::string_view n : could_be)
        shown_names.push_back(fmt::format("--{}", n));
      return InvalidArgument(
          fmt::format("option {} is ambiguous: it could be {}", shown, Join(shown_names, ", ")));
    }
  }
  if (StartsWith(name, "--") && name.size() >= 5 && name.size() <= 40) {
    const std::string_view given = name.substr(2);
    const OptionDef* closest = nullptr;
    size_t closest_distance = 0;
    for (const OptionDef& d : kOptions) {
      const size_t distance = EditDistance(given, d.long_name);
      if (closest == nullptr || distance < closest_distance) {
        closest = &d;
        closest_distance = distance;
      }
    }
    // A quarter of the letters may be wrong: --partiton, but not --foo for --qos.
    if (closest_distance * 4 <= given.size()) {
      return InvalidArgument(fmt::format("option {} has no meaning in Shoal (did you mean --{}?)",
                                         shown, closest->long_name));
    }
  }
  return InvalidArgument(fmt::format("option {} has no meaning in Shoal", shown));
}

}  // namespace

Status ReadOption(std::string_view name, std::optional<std::string_view> value, Source source,
                  Request& request, std::vector<std::string>& notes) {
  const OptionDef* def = FindOption(name);
  if (def == nullptr) {
    if (!StartsWith(name, "-") || name == "-" || name == "--") {
      return InvalidArgument(fmt::format("'{}' is not an option", Printable(name)));
    }
    if (const SlurmOnly* slurm = FindSlurmOnly(name); slurm != nullptr) {
      if (!slurm->takes_value && value)
        return InvalidArgument(fmt::format("{} takes no value", name));
      if (slurm->takes_value && (!value || value->empty()))
        return InvalidArgument(fmt::format("{} needs a value", name));
      request.ignored.push_back(value ? fmt::format("--{}={}", slurm->long_name, Printable(*value))
                                      : fmt::format("--{}", slurm->long_name));
      return Status::Ok();
    }
    return UnknownOption(name);
  }
  const bool flag = def->value_name.empty();
  if (flag && value) return InvalidArgument(fmt::format("{} takes no value", name));
  if (!flag && (!value || value->empty())) {
    return InvalidArgument(fmt::format("{} needs a value", name));
  }
  if (!flag && def->long_name != "wrap" && value->size() > kMaxValueBytes) {
    return InvalidArgument(
        fmt::format("{}: the value is longer than {} bytes", name, kMaxValueBytes));
  }
  if (value && value->size() > kMaxScriptBytes) {
    return InvalidArgument(
        fmt::format("{}: the value is longer than {} bytes", name, kMaxScriptBytes));
  }
  Call call{name, fmt::format("--{}", def->long_name), value.value_or(""), source};
  return def->apply(call, request, notes);
}

Status ReadOptions(const std::vector<std::string>& words, Source source, Request& request,
                   std::vector<std::string>& rest, std::vector<std::string>& notes) {
  for (size_t i = 0; i < words.size(); ++i) {
    std::string_view word = words[i];
    const bool option = word.size() >= 2 && word[0] == '-' && word != "--";
    if (!option) {
      if (source == Source::kDirective) {
        return InvalidArgument(
            fmt::format("'{}' is not an option (quote values that hold spaces)", Printable(word)));
      }
      rest.assign(words.begin() + static_cast<std::ptrdiff_t>(word == "--" ? i + 1 : i),
                  words.end());
      return Status::Ok();
    }
    std::string_view name = word;
    std::optional<std::string_view> value;
    if (StartsWith(word, "--")) {
      const size_t eq = word.find('=');
      if (eq != std::string_view::npos) {
        name = word.substr(0, eq);
        value = word.substr(eq + 1);
      }
    } else if (word.size() > 2) {
      // "-N2": a short option with its value attached.
      name = word.substr(0, 2);
      value = word.substr(2);
    }
    if (!value && TakesValue(name)) {
      if (i + 1 >= words.size()) return InvalidArgument(fmt::format("{} needs a value", name));
      value = words[++i];
    }
    SHOAL_RETURN_IF_ERROR(ReadOption(name, value, source, request, notes));
  }
  return Status::Ok();
}

bool TakesValue(std::string_view name) {
  if (const OptionDef* def = FindOption(name); def != nullptr) return !def->value_name.empty();
  const SlurmOnly* slurm = FindSlurmOnly(name);
  return slurm != nullptr && slurm->takes_value;
}

Status CheckOptionName(std::string_view name) {
  if (FindOption(name) != nullptr || FindSlurmOnly(name) != nullptr) return Status::Ok();
  return UnknownOption(name);
}

std::vector<OptionInfo> OptionList() {
  std::vector<OptionInfo> out;
  out.reserve(std::size(kOptions));
  for (const OptionDef& d : kOptions)
    out.push_back({d.long_name, d.short_name, d.value_name, d.help});
  return out;
}

}  // namespace shoal::submit
