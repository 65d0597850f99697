// Internal to shoal_submit: the options of one source before they become a
// JobSpec.
//
// A submission has up to three sources of options: a script's #SBATCH lines,
// its #SHOAL lines, and the command line, each overriding the one before.
// Options that combine (-n with -c, --gpus with -N) are kept apart here, as
// the user gave them, so that a later source replaces an earlier one option by
// option; the arithmetic that turns them into per-node and per-GPU amounts
// runs once, in Resolve, over the merged options.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::submit {

// Limits past which a number is a mistake rather than a request no cluster
// can meet today; the scheduler, not the parser, says what a given cluster
// cannot hold.
inline constexpr int kMaxNodes = 100'000;          // as JobSpec::Validate
inline constexpr int kMaxTasks = 1'000'000;        // as JobSpec::Validate
inline constexpr int kMaxTotalGpus = 1'000'000;    // as JobSpec::Validate
inline constexpr int kMaxCpus = 100'000;           // per task, per GPU, or per node
inline constexpr int64_t kMaxMemMib = 64LL << 20;  // 64 TiB, per node or per GPU
inline constexpr Duration kMaxTimeLimit = std::chrono::hours(24 * 365);
inline constexpr size_t kMaxValueBytes = 64 << 10;  // one option's value, --wrap excepted
inline constexpr size_t kMaxDependencies = 1000;

// GPUs asked for by one of --gres=gpu, --gpus/-G or --gpus-per-node. A source
// gives them one way only; a later source replaces the whole request,
// including the model.
struct GpuRequest {
  bool per_node = true;  // false: a total over all nodes (--gpus)
  int count = 0;
  std::string model;   // empty: any model
  std::string option;  // the option as the user spelled it, for messages
};

// CPUs: per task (-c) or per GPU (--cpus-per-gpu), which Slurm keeps exclusive.
struct CpuRequest {
  bool per_gpu = false;
  int cpus = 0;
  std::string option;
};

// Memory: per node (--mem), per GPU (--mem-per-gpu) or per CPU
// (--mem-per-cpu), which Slurm keeps exclusive; --mem=0 is all of a node's.
struct MemRequest {
  bool per_gpu = false;
  bool per_cpu = false;
  bool whole_node = false;
  int64_t mib = 0;
  std::string option;
};

// Which of the submitting shell's variables go with the job (--export):
// all of them (Slurm's default), none, or the names listed; NAME=value
// entries are set whatever the rest says.
struct ExportRequest {
  bool all = true;
  std::vector<std::string> names;
  std::map<std::string, std::string> values;
};

// The options one source gave; an empty optional is an option it did not
// give. A plain value type: copy it freely.
struct Request {
  std::optional<std::string> name;
  std::optional<std::string> account;
  std::optional<std::string> partition;
  std::optional<std::string> qos;
  std::optional<std::string> reservation;
  std::optional<uint16_t> mail_types;
  std::optional<std::string> mail_user;
  std::optional<std::string> work_dir;
  std::optional<std::string> stdout_path;
  std::optional<std::string> stderr_path;
  std::optional<std::string> wrap;

  std::optional<int> nodes;
  std::optional<int> tasks;
  std::optional<int> tasks_per_node;
  std::optional<int> gpu_milli;
  std::optional<GpuRequest> gpu;
  std::optional<CpuRequest> cpu;
  std::optional<MemRequest> mem;

  std::optional<Duration> time_limit;
  std::optional<ArraySpec> array;
  std::optional<DependencyList> dependencies;
  std::optional<bool> requeue;
  std::optional<bool> exclusive;
  std::optional<bool> hold;
  // The outer optional says whether --begin was given; the inner one is empty
  // for --begin=now, which removes a begin time an earlier source set.
  std::optional<std::optional<Time>> begin_time;
  std::optional<std::vector<std::string>> constraints;
  std::optional<std::vector<std::string>> node_list;  // --nodelist, expanded
  std::optional<std::vector<std::string>> exclude;    // --exclude, expanded
  struct SignalRequest {
    int signal = 0;
    int before_s = 60;
    bool batch_only = false;
  };
  std::optional<SignalRequest> signal;
  std::optional<ExportRequest> exported;
  std::optional<std::string> export_file;
  std::optional<bool> get_user_env;
  std::optional<int> gpus_per_task;
  std::optional<int> tasks_per_gpu;
  std::optional<std::string> comment;
  std::optional<std::vector<std::pair<std::string, double>>> gpu_speeds;  // --gpu-speed
  std::optional<int> gpu_power_cap_w;                                     // --gpu-power-cap
  std::optional<bool> append_output;                                      // --open-mode=append
  // --container-*: pyxis' options (docs/containers.md).
  std::optional<std::string> container_image;
  std::optional<std::vector<ContainerMount>> container_mounts;
  std::optional<std::string> container_workdir;
  std::optional<std::vector<std::string>> container_env;
  std::optional<bool> container_mount_home;
  // Slurm's options that mean nothing to Shoal, as given ("--hint=compute_bound"):
  // accepted with a note, or refused under --strict. Every source's add up.
  std::vector<std::string> ignored;
  // The command line's own: how `shoal submit` behaves, not the job.
  std::optional<bool> strict;
  std::optional<bool> parsable;
  std::optional<bool> wait;
  std::optional<bool> test_only;
};

// Replaces the options of `low` with those `high` gives.
void Overlay(const Request& high, Request& low);

// Writes the options `request` gives onto `spec`, leaving the fields it does
// not touch as they are. The CPU arithmetic (documented in submit.h) reads
// the spec's node and task counts after this request's are written, so that a
// lone option applied to a spec sees what was there before.
Status Resolve(const Request& request, JobSpec& spec);

}  // namespace shoal::submit
