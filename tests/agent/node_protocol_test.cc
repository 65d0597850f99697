// The node protocol across the real encoders of both sides: the server's
// launch and kill bodies (AgentLink) read by the agent, and the agent's
// heartbeat (with a simulated node's telemetry) read by the protocol's
// decoder that the server uses (api/node_protocol.h).
#include "api/node_protocol.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/gpu/provider.h"
#include "agent/protocol.h"
#include "api/json.h"
#include "server/agent_link.h"
#include "testing/fake_clock.h"

namespace shoal {
namespace {

server::LaunchOrder SomeLaunch() {
  server::LaunchOrder o;
  o.node = "n2";
  o.address = "10.0.0.2:6821";
  o.job = JobId(42);
  o.epoch = 3;
  o.spec.name = "train";
  o.spec.user = "alice";
  o.spec.command = "python3 train.py";
  o.spec.work_dir = "/home/alice";
  o.spec.env = {{"A", "1"}};
  o.spec.nodes = 2;
  o.spec.gpus_per_node = 2;
  o.spec.tasks = 3;
  o.allocation = {.node = NodeId(2),
                  .gpu_mask = 0b1100,
                  .gpu_milli = 1000,
                  .cpu_milli = 8000,
                  .mem_mib = 65536,
                  .exclusive = false};
  o.node_rank = 1;
  o.nodes = {"n1", "n2"};
  o.addresses = {"10.0.0.1:6821", "10.0.0.2:6821"};
  o.node_cpus = {16, 8};
  o.master_port = 29500;
  o.array_job_id = 40;
  o.array_task_id = 2;
  o.not_after = TimeFromSeconds(1800000000);
  return o;
}

api::Json Parsed(const std::string& body) {
  auto j = api::Parse(body);
  EXPECT_TRUE(j.ok()) << body;
  return j.ok() ? *j : api::Json();
}

TEST(NodeProtocolCrossTest, TheServersLaunchIsTheAgentsStep) {
  const server::LaunchOrder o = SomeLaunch();
  auto step = agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n2");
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->job, 42u);
  EXPECT_EQ(step->epoch, 3u);
  EXPECT_EQ(step->user, "alice");
  EXPECT_EQ(step->job_name, "train");
  EXPECT_EQ(step->command, "python3 train.py");
  EXPECT_EQ(step->work_dir, "/home/alice");
  EXPECT_EQ(step->node_name, "n2");
  EXPECT_EQ(step->node_rank, 1);
  EXPECT_EQ(step->nodes, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
  EXPECT_EQ(step->master_addr, "10.0.0.1");
  EXPECT_EQ(step->master_port, 29500);
  EXPECT_EQ(step->tasks_per_node, (std::vector<int>{2, 1}));
  EXPECT_EQ(step->gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(step->cpu_milli, 8000);
  EXPECT_EQ(step->memory_mib, 65536);
  EXPECT_EQ(step->not_after, o.not_after);
  EXPECT_EQ(step->array_job_id, 40u);  // %A and %a of its output paths
  EXPECT_EQ(step->array_task_id, 2);
  for (const char* var : {"A=1", "SHOAL_ARRAY_JOB_ID=40", "SHOAL_ARRAY_TASK_ID=2",
                          "SLURM_ARRAY_JOB_ID=40", "SLURM_ARRAY_TASK_ID=2"}) {
    EXPECT_NE(std::find(step->env.begin(), step->env.end(), var), step->env.end()) << var;
  }
  // The order names its node: another agent refuses it.
  auto elsewhere = agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n1");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.status().message().find("not this node (n1)"), std::string::npos)
      << elsewhere.status().message();
}

// A batch job: step 0 is the script, once, on the first node, with the
// job's SLURM_* layout; a later step runs on the nodes its order names.
TEST(NodeProtocolCrossTest, BatchScriptsRunOnceAndStepsWhereTheyAreSent) {
  server::LaunchOrder o = SomeLaunch();
  o.spec.script = true;
  o.spec.command = "#!/bin/sh\nsrun hostname\n";
  o.spec.tasks_per_node = 2;
  o.node_rank = 0;
  o.batch = true;
  o.job_token = "shoaljob_42_3_x_y";
  auto batch = agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n1",
                                     {.server = "https://10.0.0.9:6820", .ca_file = "/x/ca.crt"});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_TRUE(batch->batch);
  EXPECT_TRUE(batch->script);
  EXPECT_EQ(batch->tasks_per_node, (std::vector<int>{1}));
  EXPECT_EQ(batch->nodes, (std::vector<std::string>{"10.0.0.1"}));
  for (const char* var :
       {"SLURM_JOB_ID=42", "SLURM_JOB_NODELIST=10.0.0.[1-2]", "SLURM_NNODES=2", "SLURM_NTASKS=3",
        "SLURM_TASKS_PER_NODE=2,1", "SLURM_NTASKS_PER_NODE=2", "SLURM_GPUS_ON_NODE=2",
        "SLURM_JOB_GPUS=2,3", "SLURM_JOB_CPUS_PER_NODE=16,8", "SLURM_CPUS_ON_NODE=8",
        "SHOAL_SERVER=https://10.0.0.9:6820", "SHOAL_CA_FILE=/x/ca.crt",
        "SHOAL_JOB_TOKEN=shoaljob_42_3_x_y"}) {
    EXPECT_NE(std::find(batch->env.begin(), batch->env.end(), var), batch->env.end()) << var;
  }
  // Slurm's compressed form for nodes alike; nothing from a server that does not send them.
  o.node_cpus = {8, 8};
  auto alike = agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n1");
  ASSERT_TRUE(alike.ok()) << alike.status().ToString();
  EXPECT_NE(std::find(alike->env.begin(), alike->env.end(), "SLURM_JOB_CPUS_PER_NODE=8(x2)"),
            alike->env.end());
  o.node_cpus.clear();
  auto older = agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n1");
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_TRUE(std::none_of(older->env.begin(), older->env.end(), [](const std::string& v) {
    return v.starts_with("SLURM_JOB_CPUS_PER_NODE=");
  }));
  // Not on another node: a batch launch is the first node's alone.
  o.node_rank = 1;
  EXPECT_FALSE(agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n2").ok());

  o.batch = false;
  o.step = 5;
  o.run = StepSpec{.argv = {"python3", "x.py"}, .gpus_per_task = 1, .env = {{"LR", "3"}}};
  o.step_nodes = {1};
  o.step_tasks = {2};
  auto step = agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n2");
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->step, 5u);
  EXPECT_FALSE(step->script);
  EXPECT_TRUE(step->has_batch_step);
  EXPECT_EQ(step->argv, (std::vector<std::string>{"python3", "x.py"}));
  EXPECT_EQ(step->nodes, (std::vector<std::string>{"10.0.0.2"}));
  EXPECT_EQ(step->node_rank, 0);
  EXPECT_EQ(step->tasks_per_node, (std::vector<int>{2}));
  EXPECT_EQ(step->gpus_per_task, 1);
  EXPECT_NE(std::find(step->env.begin(), step->env.end(), "LR=3"), step->env.end());
  // A step order that leaves out the node it is sent to is refused.
  o.step_nodes = {0};
  o.step_tasks = {1};
  EXPECT_FALSE(agent::StepFromLaunch(Parsed(server::AgentLink::LaunchBody(o)), "n2").ok());
}

TEST(NodeProtocolCrossTest, TheAgentRefusesAStrayField) {
  api::Json j = Parsed(server::AgentLink::LaunchBody(SomeLaunch()));
  j["gpu_count"] = 2;
  auto step = agent::StepFromLaunch(j, "n2");
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.status().message().find("launch: unknown field 'gpu_count'"), std::string::npos)
      << step.status().message();
}

TEST(NodeProtocolCrossTest, TheServersKillIsTheAgentsStop) {
  server::KillOrder o;
  o.node = "n1";
  o.address = "10.0.0.1:6821";
  o.job = JobId(9);
  o.epoch = 2;
  o.grace = std::chrono::milliseconds(1500);
  o.why = "cancelled";
  auto k = agent::KillFromJson(Parsed(server::AgentLink::KillBody(o)));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->job, 9u);
  EXPECT_EQ(k->epoch, 2u);
  EXPECT_FALSE(k->step.has_value());  // every step of the epoch
  EXPECT_EQ(k->grace, std::chrono::milliseconds(1500));
  EXPECT_EQ(k->why, "cancelled");
  o.step = 4;
  auto one = agent::KillFromJson(Parsed(server::AgentLink::KillBody(o)));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->step, 4u);
}

// A simulated DGX's real readings, through the agent's encoder and the
// server's decoder: every figure arrives, none read as a default.
// A node with MIG slices registers them as GPUs the server reads back
// whole (profile, instance ids, physical GPU), and a launch on slices
// becomes a step that names them to CUDA by MIG UUID.
TEST(NodeProtocolCrossTest, MigSlicesRegisterAndLaunchAsTheirOwnGpus) {
  testing::JumpingClock clock;
  auto provider = agent::MakeSimulated("dgx-h100", "n1", 7, clock);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  ASSERT_TRUE((*provider)->SetMigLayout(1, {"3g.40gb", "2g.20gb", "2g.20gb"}).ok());
  auto devices = (*provider)->Discover();
  ASSERT_TRUE(devices.ok());
  Node node;
  node.name = "n1";
  node.address = "127.0.0.1:6821";
  node.cpu_milli = 8000;
  node.memory_mib = 1024;
  node.gpus = agent::NodeGpus(*devices);
  auto back = api::RegistrationFromJson(Parsed(api::RegistrationToJson(node).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->gpus.size(), 10u);
  const Gpu& slice = back->gpus[2];
  EXPECT_EQ(slice.model, "H100-SXM-80GB/2g.20gb");
  EXPECT_EQ(slice.mig_profile, "2g.20gb");
  EXPECT_EQ(slice.Device(), 1);
  EXPECT_EQ(slice.mig_gi, (*devices)[2].mig_gi);
  EXPECT_EQ(slice.mig_ci, 0);
  EXPECT_EQ(back->gpus[4].Device(), 2);
  EXPECT_FALSE(back->gpus[4].IsMigSlice());

  agent::StepRequest step;
  step.gpus = {2, 4};
  ASSERT_TRUE(agent::DescribeStepGpus(step, *devices).ok());
  ASSERT_EQ(step.gpu_units.size(), 2u);
  EXPECT_EQ(step.gpu_units[0].cuda_name, (*devices)[2].uuid);
  EXPECT_EQ(step.gpu_units[0].fence.device, 1);
  EXPECT_EQ(step.gpu_units[0].fence.gi, (*devices)[2].mig_gi);
  EXPECT_EQ(step.gpu_units[1].cuda_name, "2");
  EXPECT_EQ(step.gpu_units[1].fence.gi, -1);
  step.gpus = {10};
  EXPECT_FALSE(agent::DescribeStepGpus(step, *devices).ok()) << "a GPU the node no longer has";

  // A slice without its instance ids, or named like a whole GPU, is refused.
  api::Json bad = api::RegistrationToJson(node);
  bad["gpus"][2].erase("mig_gi");
  bad["gpus"][2]["mig_gi"] = -1;
  EXPECT_FALSE(api::RegistrationFromJson(bad).ok());
  bad = api::RegistrationToJson(node);
  bad["gpus"][2]["model"] = "H100-SXM-80GB";
  EXPECT_FALSE(api::RegistrationFromJson(bad).ok());
}

TEST(NodeProtocolCrossTest, MigOrdersAreReadStrictly) {
  auto order = api::MigOrderFromJson(Parsed(R"({"layout": "7x1g.10gb", "gpus": [0, 3]})"));
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  EXPECT_EQ(order->layout, "7x1g.10gb");
  EXPECT_EQ(order->gpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(api::ToJson(*order), Parsed(R"({"layout": "7x1g.10gb", "gpus": [0, 3]})"));
  for (const char* text : {R"({"gpus": [0]})", R"({"layout": ""})", R"({"layout": "none", "x": 1})",
                           R"({"layout": "none", "gpus": [64]})", R"({"layout": 7})", "[]"}) {
    EXPECT_FALSE(api::MigOrderFromJson(Parsed(text)).ok()) << text;
  }
}

TEST(NodeProtocolCrossTest, TheAgentsHeartbeatIsWhatTheServerReads) {
  testing::JumpingClock clock;
  auto provider = agent::MakeSimulated("dgx-h100", "n1", 7, clock);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  auto devices = (*provider)->Discover();
  ASSERT_TRUE(devices.ok());
  (*provider)->SetLoad(0, 1.0);
  clock.Jump(std::chrono::seconds(30));
  auto samples = (*provider)->Sample();
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), devices->size());
  std::vector<agent::GpuHealth> health(devices->size());
  health[3] = {.healthy = false, .reason = "GPU 3: XID 79"};
  const std::vector<agent::StepReport> steps = {
      {.job = 1, .epoch = 1, .running = true, .message = ""},
      {.job = 1, .epoch = 1, .step = 2, .running = true, .message = ""},
      {.job = 2, .epoch = 4, .running = false, .exit_code = 1, .message = "boom"},
      {.job = 3, .epoch = 1, .running = false, .signal = 9, .message = ""}};

  auto hb = api::HeartbeatFromJson(
      Parsed(agent::HeartbeatJson(steps, *devices, *samples, health).dump()));
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();
  EXPECT_EQ(hb->running, (std::vector<api::RunningStep>{{JobId(1), 1, 0}, {JobId(1), 1, 2}}));
  ASSERT_EQ(hb->events.size(), 2u);
  EXPECT_EQ(hb->events[0].job, JobId(2));
  EXPECT_EQ(hb->events[0].epoch, 4u);
  EXPECT_EQ(hb->events[0].kind, api::JobEvent::kExited);
  EXPECT_EQ(hb->events[0].exit_code, 1);
  EXPECT_EQ(hb->events[0].message, "boom");
  EXPECT_EQ(hb->events[1].signal, 9);
  ASSERT_TRUE(hb->has_gpus);
  ASSERT_EQ(hb->gpus.size(), devices->size());
  for (size_t i = 0; i < devices->size(); ++i) {
    const agent::GpuSample& s = (*samples)[i];
    const api::GpuReport& g = hb->gpus[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(g.index, (*devices)[i].index);
    EXPECT_EQ(g.healthy, i != 3);
    EXPECT_EQ(g.health_reason, i == 3 ? "GPU 3: XID 79" : "");
    const api::GpuTelemetry& t = g.telemetry;
    ASSERT_TRUE(t.present);
    EXPECT_EQ(t.util_pct, s.util_pct);
    EXPECT_EQ(t.mem_copy_util_pct, s.mem_copy_util_pct);
    EXPECT_EQ(t.fb_used_mib, s.fb_used_mib);
    EXPECT_EQ(t.fb_free_mib, s.fb_free_mib);
    EXPECT_EQ(t.power_w, s.power_w);
    EXPECT_EQ(t.temperature_c, s.temperature_c);
    EXPECT_EQ(t.sm_clock_mhz, s.sm_clock_mhz);
    EXPECT_EQ(t.energy_j, s.energy_j);
    EXPECT_EQ(t.ecc_corrected, s.ecc_corrected);
    EXPECT_EQ(t.ecc_uncorrected, s.ecc_uncorrected);
    EXPECT_EQ(t.xid_errors, s.xid_errors);
    EXPECT_EQ(t.last_xid, s.last_xid);
    EXPECT_EQ(t.clock_events, s.clock_event_reasons);
  }
  EXPECT_GT(hb->gpus[0].telemetry.util_pct, 0) << "the loaded GPU reads as busy";

  // The extra beats that report an end at once leave the GPUs out.
  auto quick = api::HeartbeatFromJson(
      Parsed(agent::HeartbeatJson(steps, *devices, *samples, health, false).dump()));
  ASSERT_TRUE(quick.ok()) << quick.status().ToString();
  EXPECT_FALSE(quick->has_gpus);
  EXPECT_EQ(quick->events.size(), 2u);
}

}  // namespace
}  // namespace shoal
