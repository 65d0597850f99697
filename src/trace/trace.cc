#include "trace/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "core/strings.h"
#include "trace/clusters.h"
#include "trace/gavel_throughputs.h"
#include "trace/text_file.h"

namespace shoal::trace {

namespace {

// ---------------------------------------------------------------------------
// Reading fields.

// Index of each known column in a header line; -1 for the absent ones.
class Header {
 public:
  // Fails on a column outside `known`, a repeated one, or a missing `required` one.
  static Result<Header> Read(const LineCursor& cursor,
                             std::initializer_list<std::string_view> known,
                             std::initializer_list<std::string_view> required) {
    Header h;
    h.known_.assign(known.begin(), known.end());
    h.index_.assign(known.size(), -1);
    std::vector<std::string_view> fields = cursor.Fields(',');
    h.columns_ = static_cast<int>(fields.size());
    for (size_t i = 0; i < fields.size(); ++i) {
      auto it = std::find(h.known_.begin(), h.known_.end(), fields[i]);
      if (it == h.known_.end()) {
        return cursor.Error(
            fmt::format("unknown column '{}' (known: {})", fields[i], Joined(h.known_)));
      }
      int& slot = h.index_[static_cast<size_t>(it - h.known_.begin())];
      if (slot >= 0) return cursor.Error(fmt::format("column '{}' appears twice", fields[i]));
      slot = static_cast<int>(i);
    }
    for (std::string_view r : required) {
      if (!h.Has(r)) return cursor.Error(fmt::format("missing column '{}'", r));
    }
    return h;
  }

  bool Has(std::string_view column) const { return Index(column) >= 0; }
  int ColumnCount() const { return columns_; }

  // The row's field for `column`, or empty when the file has no such column.
  std::string_view Get(const std::vector<std::string_view>& row, std::string_view column) const {
    int i = Index(column);
    return i < 0 ? std::string_view() : row[static_cast<size_t>(i)];
  }

 private:
  int Index(std::string_view column) const {
    for (size_t i = 0; i < known_.size(); ++i) {
      if (known_[i] == column) return index_[i];
    }
    return -1;
  }

  static std::string Joined(const std::vector<std::string_view>& names) {
    std::string out;
    for (std::string_view n : names) {
      if (!out.empty()) out += ", ";
      out += n;
    }
    return out;
  }

  std::vector<std::string_view> known_;
  std::vector<int> index_;
  int columns_ = 0;
};

// A non-negative number of seconds.
Result<double> Seconds(std::string_view field, std::string_view column) {
  auto v = ParseDouble(field);
  if (!v.ok()) return InvalidArgument(fmt::format("{}: '{}' is not a number", column, field));
  if (*v < 0) return InvalidArgument(fmt::format("{}: {} is negative", column, field));
  return *v;
}

// An integer in [lo, hi].
Result<int64_t> Count(std::string_view field, std::string_view column, int64_t lo, int64_t hi) {
  auto v = ParseInt(field);
  if (!v.ok()) return InvalidArgument(fmt::format("{}: '{}' is not an integer", column, field));
  if (*v < 0) return InvalidArgument(fmt::format("{}: {} is negative", column, *v));
  if (*v < lo || *v > hi)
    return InvalidArgument(fmt::format("{}: {} is out of range [{}, {}]", column, *v, lo, hi));
  return *v;
}

// Runs `read` on every data row, turning its errors into "path:line: ...".
template <typename ReadRow>
Status ForEachRow(LineCursor& cursor, size_t columns, char sep, ReadRow read) {
  while (cursor.Next()) {
    std::vector<std::string_view> row = cursor.Fields(sep);
    if (row.size() != columns) {
      return cursor.Error(fmt::format("expected {} columns, found {}", columns, row.size()));
    }
    Status s = read(row);
    if (!s.ok()) return cursor.Error(s.message());
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Microsoft ITP (raw and ElasticFlow variants).

Status ReadItp(const TextFile& file, Trace& trace) {
  LineCursor cursor(file);
  cursor.Next();
  SHOAL_ASSIGN_OR_RETURN(
      Header h, Header::Read(cursor,
                             {"job_id", "submission_time", "duration", "num_gpu", "num_iteration",
                              "model_name", "deadline", "batch_size"},
                             {"job_id", "submission_time", "duration", "num_gpu"}));
  Status rows = ForEachRow(
      cursor, static_cast<size_t>(h.ColumnCount()), ',',
      [&](const std::vector<std::string_view>& row) -> Status {
        TraceJob job;
        job.name = std::string(h.Get(row, "job_id"));
        if (job.name.empty()) return InvalidArgument("job_id is empty");
        SHOAL_ASSIGN_OR_RETURN(double submit,
                               Seconds(h.Get(row, "submission_time"), "submission_time"));
        SHOAL_ASSIGN_OR_RETURN(double duration, Seconds(h.Get(row, "duration"), "duration"));
        SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Count(h.Get(row, "num_gpu"), "num_gpu", 0, 1'000'000));
        job.submit = TimeFromSeconds(submit);
        job.duration = DurationFromSeconds(duration);
        job.gpus = static_cast<int>(gpus);
        job.kind = std::string(h.Get(row, "model_name"));
        trace.jobs.push_back(std::move(job));
        return Status::Ok();
      });
  if (!rows.ok()) return rows;
  trace.notes.push_back(
      "ITP: run times are those recorded on Microsoft's clusters (GPU type not recorded); each job "
      "is a gang "
      "of num_gpu GPUs, spread over as few nodes as needed. The trace has no cluster: ElasticFlow "
      "replayed "
      "it on 16 nodes x 8 A100 (examples/clusters/itp-16x8-a100.toml).");
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Gavel / Philly (7-field TSV, no header).

constexpr std::array<std::string_view, 3> kGavelGpus = {"V100", "P100", "K80"};

Status ReadGavel(const TextFile& file, Trace& trace) {
  LineCursor cursor(file);
  std::string stem = FileStem(file.path());
  int scaled = 0;
  int index = 0;
  Status rows =
      ForEachRow(cursor, 7, '\t', [&](const std::vector<std::string_view>& row) -> Status {
        // job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor
        TraceJob job;
        job.name = fmt::format("{}-{}", stem, index++);
        job.kind = std::string(row[0]);
        if (job.kind.empty()) return InvalidArgument("job_type is empty");
        SHOAL_ASSIGN_OR_RETURN(int64_t needs_data_dir, Count(row[3], "needs_data_dir", 0, 1));
        (void)needs_data_dir;  // checked only: the simulator does not stage data
        SHOAL_ASSIGN_OR_RETURN(int64_t steps, Count(row[4], "total_steps", 1, INT64_MAX / 4));
        SHOAL_ASSIGN_OR_RETURN(double arrival, Seconds(row[5], "arrival_time"));
        SHOAL_ASSIGN_OR_RETURN(int64_t scale, Count(row[6], "scale_factor", 1, 1'000'000));
        job.submit = TimeFromSeconds(arrival);
        job.gpus = static_cast<int>(scale);
        if (!GavelThroughputMeasured(job.kind, job.gpus)) ++scaled;
        for (std::string_view gpu : kGavelGpus) {
          auto throughput = GavelThroughput(job.kind, job.gpus, gpu);
          if (!throughput.ok()) {
            return InvalidArgument(fmt::format("job_type: unknown Gavel job type '{}'", job.kind));
          }
          // Zero: Gavel measured the job as not fitting this GPU.
          if (*throughput <= 0) continue;
          job.duration_by_model.emplace_back(
              std::string(gpu), DurationFromSeconds(static_cast<double>(steps) / *throughput));
        }
        for (const auto& [model, d] : job.duration_by_model) {
          if (model == "V100") job.duration = d;
        }
        trace.jobs.push_back(std::move(job));
        return Status::Ok();
      });
  if (!rows.ok()) return rows;
  trace.notes.push_back(
      fmt::format("Gavel: run time = total_steps / throughput, with Gavel's measured isolated "
                  "throughputs per GPU type "
                  "(stanford-futuredata/gavel scheduler/oracle_throughputs_v2.json, "
                  "data/gavel/README.md); `duration` is "
                  "the V100 time and duration_by_model has V100, P100 and K80 where the job fits. "
                  "{} of {} jobs ask for a "
                  "GPU count Gavel did not measure for their job type; their throughput is the "
                  "one-GPU figure times the "
                  "GPU count, which assumes perfect scaling.",
                  scaled, index));
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Pollux / Sia workloads.

// Pollux (Qiao et al., OSDI'21) sizes its benchmark applications by the
// GPU-hours they take to train: small 0-1, medium 1-10, large 10-100 and
// extra-large 100-1000 GPU-hours, with CIFAR-10 and BERT small, DeepSpeech2
// medium, YOLOv3 large and ImageNet extra-large (its Table 1, as we recall it:
// we could not check the paper here, see Trace::notes). A job's total work is
// the geometric middle of its category, 1-10 -> sqrt(10) GPU-hours; the small
// category starts at 0, whose geometric middle is 0, so it is taken as 0.1-1.
struct PolluxApp {
  std::string_view name;
  double gpu_hours;
};
constexpr PolluxApp kPolluxApps[] = {
    {"cifar10", 0.31622776601683794},     // small: sqrt(0.1 * 1)
    {"bert", 0.31622776601683794},        // small
    {"deepspeech2", 3.1622776601683795},  // medium: sqrt(1 * 10)
    {"yolov3", 31.622776601683793},       // large: sqrt(10 * 100)
    {"imagenet", 316.22776601683796},     // extra-large: sqrt(100 * 1000)
};

Status ReadPollux(const TextFile& file, Trace& trace) {
  LineCursor cursor(file);
  cursor.Next();
  SHOAL_ASSIGN_OR_RETURN(
      Header h, Header::Read(cursor, {"name", "time", "application", "num_replicas", "batch_size"},
                             {"name", "time", "application", "num_replicas", "batch_size"}));
  Status rows = ForEachRow(
      cursor, static_cast<size_t>(h.ColumnCount()), ',',
      [&](const std::vector<std::string_view>& row) -> Status {
        TraceJob job;
        job.name = std::string(h.Get(row, "name"));
        if (job.name.empty()) return InvalidArgument("name is empty");
        SHOAL_ASSIGN_OR_RETURN(double time, Seconds(h.Get(row, "time"), "time"));
        SHOAL_ASSIGN_OR_RETURN(int64_t replicas,
                               Count(h.Get(row, "num_replicas"), "num_replicas", 1, 1'000'000));
        SHOAL_ASSIGN_OR_RETURN(int64_t batch,
                               Count(h.Get(row, "batch_size"), "batch_size", 1, INT64_MAX / 4));
        (void)batch;  // checked only: rigid jobs keep their batch size
        job.kind = std::string(h.Get(row, "application"));
        const PolluxApp* app = nullptr;
        for (const PolluxApp& a : kPolluxApps) {
          if (a.name == job.kind) app = &a;
        }
        if (app == nullptr) {
          return InvalidArgument(
              fmt::format("application: unknown application '{}' (cifar10, bert, deepspeech2, "
                          "yolov3, imagenet)",
                          job.kind));
        }
        job.submit = TimeFromSeconds(time);
        job.gpus = static_cast<int>(replicas);
        job.duration = DurationFromSeconds(app->gpu_hours * 3600.0 / static_cast<double>(replicas));
        trace.jobs.push_back(std::move(job));
        return Status::Ok();
      });
  if (!rows.ok()) return rows;
  trace.notes.push_back(
      "Pollux: the workload has no run times. Each job is a rigid gang of num_replicas GPUs whose "
      "work is the "
      "geometric middle of its application's size category in Pollux (OSDI'21) Table 1 as we "
      "recall it, not "
      "checked against the paper: cifar10 and bert small (0.1-1 GPU-h -> 0.32), deepspeech2 medium "
      "(1-10 -> "
      "3.2), yolov3 large (10-100 -> 32), imagenet extra-large (100-1000 -> 316), divided evenly "
      "over the GPUs. "
      "Pollux's own simulator instead replays measured goodput; results are not comparable with "
      "its papers.");
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Alibaba openb pods.

// The FGD artifact (hkust-adsl/kubernetes-scheduler-simulator, data/prepare_input.sh)
// runs the pod lists on the GPU nodes only, so CPU-only pods share GPU nodes.
constexpr std::string_view kOpenbNodeList = "openb_node_list_gpu_node.csv";

Status ReadOpenb(const TextFile& file, Trace& trace) {
  LineCursor cursor(file);
  cursor.Next();
  SHOAL_ASSIGN_OR_RETURN(
      Header h,
      Header::Read(cursor,
                   {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                    "pod_phase", "creation_time", "deletion_time", "scheduled_time"},
                   {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}));
  Status rows = ForEachRow(
      cursor, static_cast<size_t>(h.ColumnCount()), ',',
      [&](const std::vector<std::string_view>& row) -> Status {
        TraceJob job;
        job.name = std::string(h.Get(row, "name"));
        if (job.name.empty()) return InvalidArgument("name is empty");
        SHOAL_ASSIGN_OR_RETURN(job.cpu_milli,
                               Count(h.Get(row, "cpu_milli"), "cpu_milli", 0, INT64_MAX / 4));
        SHOAL_ASSIGN_OR_RETURN(job.mem_mib,
                               Count(h.Get(row, "memory_mib"), "memory_mib", 0, INT64_MAX / 4));
        SHOAL_ASSIGN_OR_RETURN(int64_t gpus,
                               Count(h.Get(row, "num_gpu"), "num_gpu", 0, kMaxGpusPerNode));
        SHOAL_ASSIGN_OR_RETURN(int64_t milli,
                               Count(h.Get(row, "gpu_milli"), "gpu_milli", 0, kMilliPerGpu));
        job.nodes = 1;
        job.gpus_per_node = static_cast<int>(gpus);
        if (gpus > 0) {
          if (milli == 0) return InvalidArgument("gpu_milli: a pod with GPUs asks for 0 of each");
          job.gpu_milli = static_cast<int>(milli);
        }
        for (std::string_view model : Split(h.Get(row, "gpu_spec"), '|')) {
          model = Trim(model);
          if (model.empty()) continue;
          // Some rows repeat a model ("V100M32|V100M32").
          if (std::find(job.gpu_models.begin(), job.gpu_models.end(), model) ==
              job.gpu_models.end()) {
            job.gpu_models.emplace_back(model);
          }
        }
        std::string_view created = h.Get(row, "creation_time");
        std::string_view deleted = h.Get(row, "deletion_time");
        if (!created.empty()) {
          SHOAL_ASSIGN_OR_RETURN(double c, Seconds(created, "creation_time"));
          job.submit = TimeFromSeconds(c);
          if (!deleted.empty()) {
            SHOAL_ASSIGN_OR_RETURN(double d, Seconds(deleted, "deletion_time"));
            if (d < c) return InvalidArgument("deletion_time is before creation_time");
            job.duration = DurationFromSeconds(d - c);
          }
        }
        trace.jobs.push_back(std::move(job));
        return Status::Ok();
      });
  if (!rows.ok()) return rows;
  trace.notes.push_back(
      "openb: one-node pods; run time = deletion_time - creation_time (0 where the file has no "
      "times, as in the "
      "multigpu variants); gpu_milli is the share of each GPU (GPU sharing); gpu_spec lists the "
      "acceptable GPU "
      "models. FGD (ATC'23) ignores the times and feeds pods in random order until 130% of GPU "
      "capacity.");

  size_t slash = file.path().find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : file.path().substr(0, slash);
  std::string node_list = dir + "/" + std::string(kOpenbNodeList);
  if (TextFile::Read(node_list).ok()) {
    SHOAL_ASSIGN_OR_RETURN(Cluster cluster, LoadCluster(node_list));
    trace.cluster = std::move(cluster);
    trace.cluster_source = node_list;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------

Result<std::string> DetectFormat(const TextFile& file) {
  std::string_view first = Trim(file.FirstLine());
  if (first.empty()) return InvalidArgument(fmt::format("{}: the file is empty", file.path()));
  if (FileExtension(file.path()) == "trace" || Split(first, '\t').size() == 7)
    return std::string("gavel");
  if (StartsWith(first, "job_id,submission_time")) return std::string("itp");
  if (first == "name,time,application,num_replicas,batch_size") return std::string("pollux");
  if (StartsWith(first, "name,cpu_milli,memory_mib,num_gpu,gpu_milli")) return std::string("openb");
  return file.Error(
      1, fmt::format("unknown trace format (itp, gavel, pollux, openb); the first line is '{}'",
                     first.substr(0, 80)));
}

}  // namespace

Result<Trace> LoadTrace(const std::string& path, const TraceOptions& options) {
  if (options.max_jobs < 0) return InvalidArgument("max_jobs must not be negative");
  SHOAL_ASSIGN_OR_RETURN(TextFile file, TextFile::Read(path));
  std::string format = options.format;
  if (format == "auto") {
    SHOAL_ASSIGN_OR_RETURN(format, DetectFormat(file));
  }
  Trace trace;
  trace.format = format;
  trace.path = path;
  if (format == "itp") {
    SHOAL_RETURN_IF_ERROR(ReadItp(file, trace));
  } else if (format == "gavel") {
    SHOAL_RETURN_IF_ERROR(ReadGavel(file, trace));
  } else if (format == "pollux") {
    SHOAL_RETURN_IF_ERROR(ReadPollux(file, trace));
  } else if (format == "openb") {
    SHOAL_RETURN_IF_ERROR(ReadOpenb(file, trace));
  } else {
    return InvalidArgument(
        fmt::format("unknown trace format '{}' (auto, itp, gavel, pollux, openb)", format));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  if (options.max_jobs > 0 && trace.jobs.size() > static_cast<size_t>(options.max_jobs)) {
    trace.jobs.resize(static_cast<size_t>(options.max_jobs));
  }
  return trace;
}

}  // namespace shoal::trace
