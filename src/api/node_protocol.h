// The node protocol: the messages between `shoal server` and `shoal agent`
// (docs/api.md, "Agent side"), defined once for both.
//
//   agent -> server  POST /v1/nodes/register         a Node (ToJson(Node) in json.h)
//   agent -> server  POST /v1/nodes/{name}/heartbeat a Heartbeat
//   server -> agent  POST /v1/launch                 a LaunchMessage
//   server -> agent  POST /v1/kill                   a KillMessage
//   agent -> server  POST /v1/join                   a JoinRequest (TLS clusters), answered
//                                                    with a JoinAnswer
//
// Each message has an encoder (ToJson) and a strict decoder: an unknown
// field, a field of the wrong type, a missing required field or a value out
// of range is an error that names the field with its path
// ("heartbeat.gpus[1].util must be a number"). Nothing is read as a silent
// default: a GPU entry with telemetry carries every telemetry field.
//
// This header declares the JSON type without including nlohmann/json, so the
// server's and the agent's headers may include it.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/ids.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::api {

using Json = nlohmann::json;

// The node protocol's version. Every message carries it as "protocol"
// (absent: 1, from before versions). A new version only adds optional
// fields, so a message of the next version decodes here with the fields it
// adds ignored, and a message of the previous one decodes as it always did:
// a controller and agents one version apart work together (upgrade the
// controller first, then the agents, node by node). Further apart is
// refused, naming both versions.
inline constexpr int kNodeProtocol = 2;
// The version `j` says it speaks, when within one of kNodeProtocol.
Result<int> MessageProtocol(const Json& j);

// Limits of the decoders, beyond which a message is refused.
inline constexpr size_t kMaxLaunchNodes = 100000;    // as JobSpec::Validate
inline constexpr size_t kMaxHeartbeatSteps = 65536;  // running steps, and events, per beat
inline constexpr double kMaxKillGraceS = 3600;
inline constexpr double kMaxProgressRate = 1e15;

// POST /v1/launch: run this node's part of one step of a job (one epoch of it).
struct LaunchMessage {
  JobId job;
  uint64_t epoch = 0;
  JobSpec spec;
  NodeAllocation allocation;  // this node's part
  int node_rank = 0;
  std::vector<std::string> nodes;      // every node of the job, in rank order
  std::vector<std::string> addresses;  // their agents' addresses, same order
  // CPUs allocated on each of `nodes`, same order (SLURM_JOB_CPUS_PER_NODE);
  // empty from a server that predates it.
  std::vector<int> node_cpus{};
  int master_port = 0;        // 0..65535
  uint64_t array_job_id = 0;  // for array tasks
  int array_task_id = -1;     // -1: not an array task
  // After this the server takes the launch as lost and runs the job again
  // under a new epoch: an agent refuses the order then. Time{}: no limit.
  Time not_after{};
  // The step (0: the job's own). A batch job's step 0 is its script: one
  // task, and only the job's first node is sent an order ("batch").
  uint32_t step = 0;
  bool batch = false;
  int restarts = 0;         // times the job was requeued (SLURM_RESTART_COUNT)
  std::string job_token{};  // lets the job's tasks start steps and read them (SHOAL_JOB_TOKEN)
  // Steps from 1 (`shoal run`): what runs, and on which of the job's nodes
  // (indices into `nodes`, in the step's rank order, this node among them)
  // with how many tasks each. Absent for step 0, whose tasks the job spec says.
  std::optional<StepSpec> run{};
  std::vector<int> step_nodes{};
  std::vector<int> step_tasks{};
};

// How long after registering an agent takes up the node session its
// registration gave (docs/security.md, "Node sessions"), beating on the
// connection its certificate opened until then: a fraction, fixed by the
// node's name, of kSessionSpreadBeats heartbeat intervals. A fleet that joins
// at once then opens its session connections (a full handshake each) at
// about a tenth of its beat rate rather than all with its registrations. An
// agent whose connection closes first (the controller restarts) takes its
// session up at once.
inline constexpr int kSessionSpreadBeats = 10;
Duration SessionDelay(std::string_view node, Duration heartbeat_interval);

// The CPUs of each node of an allocation, whole and at least one, as the
// job's SLURM_CPUS_ON_NODE and SLURM_JOB_CPUS_PER_NODE count them.
int WholeCpus(int64_t cpu_milli);
std::vector<int> NodeCpus(const Allocation& allocation);

// POST /v1/kill: stop a job's steps (SIGTERM, then SIGKILL after `grace`):
// every step of the epoch on the node, or only `step`. With `signal` set
// (1..64) nothing is stopped: the steps' tasks get that signal (sbatch
// --signal, shoal cancel --signal), only each task's own process (not its
// children) when `leader_only` (Slurm's B: for a batch shell).
struct KillMessage {
  JobId job;
  uint64_t epoch = 0;
  std::optional<uint32_t> step{};
  Duration grace{std::chrono::seconds(10)};  // "grace_s", 0..kMaxKillGraceS; absent: 10 s
  std::string why;
  int signal = 0;
  bool leader_only = false;
};

// A step that started or ended, in a heartbeat.
struct JobEvent {
  JobId job;
  uint64_t epoch = 0;
  uint32_t step = 0;
  enum Kind { kStarted, kExited } kind = kExited;
  int exit_code = 0;
  int signal = 0;
  std::string message;
  // An exit: when the step ended, on the node's clock (Time{}: not said). A
  // server that hears of it late (it was restarting, a beat was lost)
  // still ends the job then.
  Time ended{};
};

// One GPU's telemetry as the agent read it (see agent/gpu/provider.h).
struct GpuTelemetry {
  bool present = false;  // the heartbeat carried telemetry for this GPU
  double util_pct = 0;
  double mem_copy_util_pct = 0;
  int64_t fb_used_mib = 0;
  int64_t fb_free_mib = 0;
  double power_w = 0;
  double temperature_c = 0;
  double sm_clock_mhz = 0;
  double energy_j = 0;
  uint64_t ecc_corrected = 0;
  uint64_t ecc_uncorrected = 0;
  uint64_t xid_errors = 0;
  int last_xid = 0;
  uint64_t clock_events = 0;  // NVML's clock-event (throttle) reason bits
};

struct GpuReport {
  int index = 0;  // 0..kMaxGpusPerNode-1, each at most once per beat
  bool healthy = true;
  std::string health_reason;  // "reason"
  GpuTelemetry telemetry;
};

// A step the agent runs now.
struct RunningStep {
  JobId job;
  uint64_t epoch = 0;
  uint32_t step = 0;
  // The last figure the step's tasks wrote to $SHOAL_PROGRESS_FILE (units
  // a second, 0 .. kMaxProgressRate; 0: none).
  double progress = 0;
  friend bool operator==(const RunningStep&, const RunningStep&) = default;
};

// POST /v1/nodes/{name}/heartbeat.
struct Heartbeat {
  std::vector<JobEvent> events;
  std::vector<RunningStep> running;
  // The GPUs' health and telemetry, when the beat carries them: agents send
  // them on their telemetry tick, not on the extra beats that report a step's
  // end at once; a beat without them leaves the last ones in place.
  bool has_gpus = true;
  std::vector<GpuReport> gpus;  // at most kMaxGpusPerNode
};

// POST /v1/join, with a join token: the node's name (ignored when the
// token names one) and a certificate request for the node's own key.
struct JoinRequest {
  std::string name;
  std::string csr;                 // PEM, at most 64 KiB
  std::vector<std::string> names;  // host names and addresses the agent is reached by (<= 32)
};

// The node's certificate, signed by the cluster CA for `name`, and the CA.
struct JoinAnswer {
  std::string name;
  std::string certificate;  // PEM
  std::string ca;           // PEM
};

Json ToJson(const JoinRequest& m);
Result<JoinRequest> JoinRequestFromJson(const Json& j);
Json ToJson(const JoinAnswer& m);
Result<JoinAnswer> JoinAnswerFromJson(const Json& j);

Json ToJson(const LaunchMessage& m);
Result<LaunchMessage> LaunchFromJson(const Json& j);

Json ToJson(const KillMessage& m);
Result<KillMessage> KillFromJson(const Json& j);

// POST /v1/nodes/{name}/mig (an admin's) and the agent's POST /v1/mig: a
// new MIG layout for a drained node's GPUs (catalog/mig.h, docs/mig.md).
struct MigOrder {
  std::string layout;     // one GPU's layout, "7x1g.10gb"; "none": MIG off
  std::vector<int> gpus;  // physical GPUs by driver index; empty: every GPU
};
Json ToJson(const MigOrder& m);
Result<MigOrder> MigOrderFromJson(const Json& j);

Json ToJson(const Heartbeat& hb);
Result<Heartbeat> HeartbeatFromJson(const Json& j);

// The registration body is the node's JSON (ToJson(Node), json.h); its
// decoder also requires the agent's address.
Json RegistrationToJson(const Node& node);
Result<Node> RegistrationFromJson(const Json& j);

}  // namespace shoal::api
