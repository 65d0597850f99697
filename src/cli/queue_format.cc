#include "cli/queue_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "cli/client.h"
#include "cli/json_fields.h"
#include "core/hostlist.h"
#include "core/job.h"
#include "core/strings.h"

namespace shoal::cli {

namespace {

using api::Json;

struct FieldContext {
  const QueueRow& row;
  const Json& job;
  const Json& spec;
  double now;
};

std::string OrNull(std::string s) {
  return s.empty() ? "(null)" : s;
}

std::string Names(const Json& list) {
  std::vector<std::string> names;
  for (const Json& n : list)
    names.push_back(n.is_string() ? n.get<std::string>() : Str(n, "node"));
  return CompressHostList(names);
}

std::string State(const FieldContext& c) {
  return Str(c.job, "state");
}

bool Started(const FieldContext& c) {
  return c.job.contains("start_time");
}

// Seconds the job has run: to its end, or to now while it runs.
double Used(const FieldContext& c) {
  if (!Started(c)) return 0;
  const double end = c.job.contains("end_time") ? Num(c.job, "end_time") : c.now;
  return std::max(0.0, end - Num(c.job, "start_time"));
}

std::string Limit(const FieldContext& c) {
  const double limit = Num(c.job, "time_limit_s");
  return limit > 0 ? SlurmDuration(limit) : "UNLIMITED";
}

std::string TimeLeft(const FieldContext& c) {
  const double limit = Num(c.job, "time_limit_s");
  return limit > 0 ? SlurmDuration(std::max(0.0, limit - Used(c))) : "UNLIMITED";
}

std::string NodeCount(const FieldContext& c) {
  const size_t allocated = c.job.value("allocation", Json::array()).size();
  if (allocated > 0) return std::to_string(allocated);
  return std::to_string(std::max(1, static_cast<int>(Num(c.spec, "nodes", 1))));
}

// CPUs the job holds, or for one not started those it asks for; N/A when it
// reserves none (it shares its nodes' CPUs).
std::string Cpus(const FieldContext& c) {
  double cpus = 0;
  for (const Json& a : c.job.value("allocation", Json::array()))
    cpus += Num(a, "cpus");
  if (cpus == 0) {
    const double nodes = std::max(1.0, Num(c.spec, "nodes", 1));
    const double gpus = Num(c.spec, "gpus_per_node") > 0 ? Num(c.spec, "gpus_per_node") * nodes
                                                         : Num(c.spec, "gpus");
    cpus = std::max({Num(c.spec, "cpus_per_node") * nodes,
                     Num(c.spec, "cpus_per_task") * std::max(1.0, Num(c.spec, "tasks", 1)),
                     Num(c.spec, "cpus_per_gpu") * gpus});
  }
  return cpus > 0 ? fmt::format("{:g}", cpus) : "N/A";
}

std::string MinMemory(const FieldContext& c) {
  const auto per_node = static_cast<int64_t>(Num(c.spec, "mem_per_node_mib"));
  const auto per_gpu = static_cast<int64_t>(Num(c.spec, "mem_per_gpu_mib"));
  if (per_node > 0) return FormatMemoryMib(per_node);
  if (per_gpu > 0) return FormatMemoryMib(per_gpu) + "/gpu";
  return "N/A";
}

std::string TresPerNode(const FieldContext& c) {
  const int per_node = static_cast<int>(Num(c.spec, "gpus_per_node"));
  return per_node > 0 ? fmt::format("gres:gpu:{}", per_node) : "N/A";
}

std::string Reason(const FieldContext& c) {
  return Str(c.job, "reason", "none");
}

// Where it runs (or ran); why it waits while pending.
std::string NodesOrReason(const FieldContext& c) {
  const Json& allocation = c.job.value("allocation", Json::array());
  if (State(c) == "pending" || allocation.empty()) return "(" + Reason(c) + ")";
  return Names(allocation);
}

std::string TimeOf(const FieldContext& c, const char* key) {
  return c.job.contains(key) ? LocalTime(Num(c.job, key)) : "N/A";
}

std::string StartTime(const FieldContext& c) {
  return TimeOf(c, Started(c) ? "start_time" : "estimated_start");
}

// When it ended, or when its time limit ends it.
std::string EndTime(const FieldContext& c) {
  if (c.job.contains("end_time")) return TimeOf(c, "end_time");
  if (!Started(c)) return "N/A";
  const double limit = Num(c.job, "time_limit_s");
  return limit > 0 ? LocalTime(Num(c.job, "start_time") + limit) : "NONE";
}

std::string Dependencies(const FieldContext& c) {
  std::vector<std::string> deps;
  for (const Json& d : c.spec.value("dependencies", Json::array())) {
    deps.push_back(d.contains("job") ? Str(d, "type") + ":" + Str(d, "job") : Str(d, "type"));
  }
  return OrNull(Join(deps, c.spec.value("dependency_any", false) ? "?" : ","));
}

// The first line of a batch script that is neither blank nor a comment
// (#SBATCH lines included).
std::string FirstCommandLine(std::string_view script) {
  while (!script.empty()) {
    const size_t end = script.find('\n');
    const std::string_view line = Trim(script.substr(0, end));
    if (!line.empty() && line[0] != '#') return std::string(line);
    if (end == std::string_view::npos) break;
    script.remove_prefix(end + 1);
  }
  return "";
}

struct Field {
  char letter;
  const char* header;
  std::string (*value)(const FieldContext&);
};

constexpr Field kFields[] = {
    {'i', "JOBID", [](const FieldContext& c) { return c.row.id; }},
    {'A', "JOBID", [](const FieldContext& c) { return Str(c.job, "id"); }},
    {'F', "ARRAY_JOB_ID",
     [](const FieldContext& c) { return Str(c.job, "array_job_id", Str(c.job, "id")); }},
    {'K', "ARRAY_TASK_ID", [](const FieldContext& c) { return c.row.tasks; }},
    {'j', "NAME", [](const FieldContext& c) { return Str(c.spec, "name"); }},
    {'u', "USER", [](const FieldContext& c) { return Str(c.spec, "user"); }},
    {'a', "ACCOUNT", [](const FieldContext& c) { return OrNull(Str(c.spec, "account")); }},
    {'P', "PARTITION", [](const FieldContext& c) { return Str(c.spec, "partition"); }},
    {'q', "QOS", [](const FieldContext& c) { return OrNull(Str(c.spec, "qos")); }},
    {'t', "ST",
     [](const FieldContext& c) {
       auto s = ParseJobState(State(c));
       return s.ok() ? std::string(JobStateCode(*s)) : State(c);
     }},
    {'T', "STATE",
     [](const FieldContext& c) {
       std::string s = State(c);
       for (char& ch : s)
         ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
       return s;
     }},
    {'M', "TIME", [](const FieldContext& c) { return SlurmDuration(Used(c)); }},
    {'l', "TIME_LIMIT", Limit},
    {'L', "TIME_LEFT", TimeLeft},
    {'D', "NODES", NodeCount},
    {'C', "CPUS", Cpus},
    {'m', "MIN_MEMORY", MinMemory},
    {'b', "TRES_PER_NODE", TresPerNode},
    {'R', "NODELIST(REASON)", NodesOrReason},
    {'r', "REASON", Reason},
    {'N', "NODELIST",
     [](const FieldContext& c) { return Names(c.job.value("allocation", Json::array())); }},
    {'Y', "SCHEDNODES",
     [](const FieldContext& c) {
       return OrNull(Names(c.job.value("planned_nodes", Json::array())));
     }},
    {'S', "START_TIME", StartTime},
    {'V', "SUBMIT_TIME", [](const FieldContext& c) { return TimeOf(c, "submit_time"); }},
    {'e', "END_TIME", EndTime},
    {'Q', "PRIORITY", [](const FieldContext& c) { return Str(c.job, "priority", "0"); }},
    {'Z', "WORK_DIR", [](const FieldContext& c) { return Str(c.spec, "work_dir"); }},
    {'o', "COMMAND", [](const FieldContext& c) { return OrNull(JobCommand(c.spec)); }},
    {'k', "COMMENT", [](const FieldContext& c) { return OrNull(Str(c.spec, "comment")); }},
    {'E', "DEPENDENCY", Dependencies},
};

const Field* FindField(char letter) {
  for (const Field& f : kFields) {
    if (f.letter == letter) return &f;
  }
  return nullptr;
}

std::string KnownLetters() {
  std::string out;
  for (const Field& f : kFields)
    out += fmt::format("{}%{}", out.empty() ? "" : " ", f.letter);
  return out;
}

// `text` padded (or cut) to `size`: squeue cuts a longer value to the size.
std::string Fit(std::string text, int size, bool right) {
  if (size <= 0) return text;
  const auto width = static_cast<size_t>(size);
  if (text.size() > width) text.resize(width);
  const std::string pad(width - text.size(), ' ');
  return right ? pad + text : text + pad;
}

// Tasks of an array as squeue's %K shows them: 3, or 4-9,12%10 for several
// (ranges of consecutive indices; %N the array's limit on running tasks,
// from its spec "0-99%10").
std::string ArrayTasks(std::vector<int> tasks, const std::string& spec) {
  std::sort(tasks.begin(), tasks.end());
  if (tasks.size() == 1) return std::to_string(tasks.front());
  auto whole = ParseArraySpec(spec);
  return FormatArraySpec({std::move(tasks), whole.ok() ? whole->max_running : 0});
}

}  // namespace

std::vector<QueueRow> QueueRows(const Json& listed) {
  std::map<uint64_t, std::vector<int>> pending_tasks;
  auto pending_task = [](const Json& j) {
    return j.contains("array_task_id") && Str(j, "state") == "pending";
  };
  for (const Json& j : listed) {
    if (!pending_task(j)) continue;
    std::vector<int>& tasks = pending_tasks[j.value("array_job_id", uint64_t{0})];
    if (!j.contains("pending_tasks")) {
      tasks.push_back(j.value("array_task_id", 0));
      continue;
    }
    for (const Json& t : j["pending_tasks"])  // a run of them, as the server collapsed it
      tasks.push_back(t.get<int>());
  }
  std::vector<QueueRow> rows;
  for (const Json& j : listed) {
    QueueRow row{&j, Str(j, "id"), "N/A"};
    if (pending_task(j)) {
      auto tasks = pending_tasks.find(j.value("array_job_id", uint64_t{0}));
      if (tasks == pending_tasks.end()) continue;  // shown with the array's first
      const bool one = tasks->second.size() == 1;
      row.tasks = ArrayTasks(std::move(tasks->second), Str(j["spec"], "array", ""));
      row.id = one ? fmt::format("{}_{}", tasks->first, row.tasks)
                   : fmt::format("{}_[{}]", tasks->first, row.tasks);
      pending_tasks.erase(tasks);
    } else if (j.contains("array_task_id")) {
      row.tasks = Str(j, "array_task_id");
      row.id = Str(j, "array_job_id") + "_" + row.tasks;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string JobCommand(const api::Json& spec) {
  if (Str(spec, "script") != "true") return Str(spec, "command");
  return "(batch script) " + FirstCommandLine(Str(spec, "command"));
}

std::string SlurmDuration(double seconds) {
  const auto total = static_cast<int64_t>(std::floor(std::max(0.0, seconds)));
  const int64_t days = total / 86400, hours = total / 3600 % 24, minutes = total / 60 % 60,
                secs = total % 60;
  if (days > 0) return fmt::format("{}-{:02}:{:02}:{:02}", days, hours, minutes, secs);
  if (hours > 0) return fmt::format("{}:{:02}:{:02}", hours, minutes, secs);
  return fmt::format("{}:{:02}", minutes, secs);
}

Result<QueueFormat> QueueFormat::Parse(std::string_view spec) {
  QueueFormat out;
  std::string literal;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] != '%') {
      literal += spec[i];
      continue;
    }
    const size_t start = i++;
    if (i < spec.size() && spec[i] == '%') {
      literal += '%';
      continue;
    }
    Piece p;
    if (i < spec.size() && spec[i] == '.') {
      p.right = true;
      ++i;
    }
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])) && p.size < 1000) {
      p.size = p.size * 10 + (spec[i++] - '0');
    }
    if (i >= spec.size()) {
      return InvalidArgument(fmt::format("--format: '{}' at the end names no field (known: {})",
                                         spec.substr(start), KnownLetters()));
    }
    p.field = spec[i];
    if (FindField(p.field) == nullptr) {
      return InvalidArgument(fmt::format("--format: unknown field '{}' (known: {})",
                                         spec.substr(start, i - start + 1), KnownLetters()));
    }
    if (!literal.empty()) out.pieces_.push_back({std::move(literal)});
    literal.clear();
    out.pieces_.push_back(std::move(p));
  }
  if (!literal.empty()) out.pieces_.push_back({std::move(literal)});
  if (out.pieces_.empty()) return InvalidArgument("--format: empty (e.g. \"%.8i %.9P %.8j %.2t\")");
  return out;
}

std::string QueueFormat::Header() const {
  std::string out;
  for (const Piece& p : pieces_)
    out += p.field == 0 ? p.literal : Fit(FindField(p.field)->header, p.size, p.right);
  return out;
}

std::string QueueFormat::Line(const QueueRow& row, double now) const {
  const Json& job = *row.job;
  static const Json kNoSpec = Json::object();
  const FieldContext c{row, job, job.contains("spec") ? job["spec"] : kNoSpec, now};
  std::string out;
  for (const Piece& p : pieces_)
    out += p.field == 0 ? p.literal : Fit(FindField(p.field)->value(c), p.size, p.right);
  return out;
}

bool QueueFormat::NeedsCommand() const {
  return std::any_of(pieces_.begin(), pieces_.end(), [](const Piece& p) { return p.field == 'o'; });
}

}  // namespace shoal::cli
