// The node protocol's messages: each survives a round trip through its
// encoder and decoder, and each decoder refuses, naming the field, an
// unknown field, a wrong type, a missing field and a value out of range.
// tests/agent/node_protocol_test.cc checks the server's and the agent's own
// encoders against these decoders.
#include "api/node_protocol.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "api/json.h"

namespace shoal::api {
namespace {

// Through text, as on the wire.
Json Wire(const Json& j) {
  auto parsed = Parse(j.dump());
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? *parsed : Json();
}

LaunchMessage FullLaunch() {
  LaunchMessage m;
  m.job = JobId(42);
  m.epoch = 3;
  m.spec.name = "train";
  m.spec.user = "alice";
  m.spec.command = "python3 train.py";
  m.spec.env = {{"A", "1"}};
  m.spec.nodes = 2;
  m.spec.gpus_per_node = 2;
  m.spec.tasks = 4;
  m.allocation = {.node = NodeId(7),
                  .gpu_mask = 0b1010,
                  .gpu_milli = 500,
                  .cpu_milli = 2500,
                  .mem_mib = 4096,
                  .exclusive = true};
  m.node_rank = 1;
  m.nodes = {"n1", "n2"};
  m.addresses = {"10.0.0.1:6821", "10.0.0.2:6821"};
  m.node_cpus = {16, 2};
  m.master_port = 29500;
  m.array_job_id = 40;
  m.array_task_id = 2;
  m.not_after = TimeFromSeconds(1800000000.5);
  return m;
}

TEST(NodeProtocolTest, LaunchRoundTrips) {
  const LaunchMessage m = FullLaunch();
  auto back = LaunchFromJson(Wire(ToJson(m)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->job, m.job);
  EXPECT_EQ(back->epoch, m.epoch);
  EXPECT_EQ(ToJson(back->spec), ToJson(m.spec));
  EXPECT_EQ(back->allocation, m.allocation);
  EXPECT_EQ(back->node_rank, 1);
  EXPECT_EQ(back->nodes, m.nodes);
  EXPECT_EQ(back->addresses, m.addresses);
  EXPECT_EQ(back->node_cpus, m.node_cpus);
  EXPECT_EQ(back->master_port, 29500);
  EXPECT_EQ(back->array_job_id, 40u);
  EXPECT_EQ(back->array_task_id, 2);
  EXPECT_EQ(back->not_after, m.not_after);
}

TEST(NodeProtocolTest, LaunchWithoutOptionalFields) {
  LaunchMessage m = FullLaunch();
  m.array_task_id = -1;
  m.not_after = Time{};
  m.node_cpus.clear();  // an older server's launch
  const Json j = ToJson(m);
  EXPECT_FALSE(j.contains("array_task_id"));
  EXPECT_FALSE(j.contains("not_after"));
  EXPECT_FALSE(j.contains("node_cpus"));
  auto back = LaunchFromJson(Wire(j));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->node_cpus.empty());
  EXPECT_EQ(back->array_task_id, -1);
  EXPECT_EQ(back->not_after, Time{});
}

// SLURM_CPUS_ON_NODE and SLURM_JOB_CPUS_PER_NODE count whole CPUs, at least one.
TEST(NodeProtocolTest, NodeCpusAreWholeCpus) {
  Allocation a;
  a.nodes = {{.node = NodeId(1), .cpu_milli = 16000},
             {.node = NodeId(2), .cpu_milli = 2500},
             {.node = NodeId(3), .cpu_milli = 0}};
  EXPECT_EQ(NodeCpus(a), (std::vector<int>{16, 2, 1}));
}

// A fleet's nodes take their sessions up spread evenly over ten heartbeat
// intervals after registering, each node at the same moment every time.
TEST(NodeProtocolTest, SessionDelaysSpreadAFleetOverTenIntervals) {
  const Duration interval = std::chrono::seconds(10);
  std::vector<int> tenths(10);
  for (int i = 0; i < 10000; ++i) {
    const std::string name = fmt::format("node-{:05d}", i);
    const Duration d = SessionDelay(name, interval);
    ASSERT_GE(d, Duration(0)) << name;
    ASSERT_LT(d, interval * kSessionSpreadBeats) << name;
    EXPECT_EQ(d, SessionDelay(name, interval));
    ++tenths[static_cast<size_t>(d / interval)];
  }
  for (int n : tenths) {
    EXPECT_GT(n, 800);  // 1,000 each when even
    EXPECT_LT(n, 1200);
  }
  EXPECT_EQ(SessionDelay("node-00001", Duration(0)), Duration(0));
}

TEST(NodeProtocolTest, KillRoundTrips) {
  const KillMessage m{
      .job = JobId(9), .epoch = 2, .grace = std::chrono::milliseconds(2500), .why = "cancelled"};
  auto back = KillFromJson(Wire(ToJson(m)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->job, m.job);
  EXPECT_EQ(back->epoch, 2u);
  EXPECT_EQ(back->grace, m.grace);
  EXPECT_EQ(back->why, "cancelled");
  // Without grace_s, the agent's default.
  auto bare = KillFromJson(Wire({{"job", 9}, {"epoch", 2}}));
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->grace, std::chrono::seconds(10));
  EXPECT_EQ(bare->signal, 0) << "a kill, not a signal";
  const KillMessage sig{
      .job = JobId(9), .epoch = 2, .step = 0, .why = "--signal", .signal = 10, .leader_only = true};
  auto sig_back = KillFromJson(Wire(ToJson(sig)));
  ASSERT_TRUE(sig_back.ok()) << sig_back.status().ToString();
  EXPECT_EQ(sig_back->signal, 10);
  EXPECT_TRUE(sig_back->leader_only);
  EXPECT_EQ(sig_back->step, 0u);
}

GpuTelemetry SomeTelemetry(int k) {
  return {.present = true,
          .util_pct = 40.5 + k,
          .mem_copy_util_pct = 12,
          .fb_used_mib = 40960 + k,
          .fb_free_mib = 40960 - k,
          .power_w = 612.5,
          .temperature_c = 63,
          .sm_clock_mhz = 1980,
          .energy_j = 123456.5,
          .ecc_corrected = 3,
          .ecc_uncorrected = 1,
          .xid_errors = 2,
          .last_xid = 79,
          .clock_events = 0x40};
}

Heartbeat FullHeartbeat() {
  Heartbeat hb;
  hb.running = {{JobId(1), 1, 0}, {JobId(5), 2, 0, 1234.5}, {JobId(5), 2, 3}};
  hb.events.push_back(
      {JobId(3), 1, 0, JobEvent::kExited, 137, 9, "out of memory", TimeFromJson(1.8e9 + 0.25)});
  hb.events.push_back({JobId(4), 2, 0, JobEvent::kStarted, 0, 0, ""});
  hb.events.push_back({JobId(6), 1, 7, JobEvent::kExited, -1, 0, ""});
  hb.gpus.push_back({0, true, "", SomeTelemetry(0)});
  hb.gpus.push_back({1, false, "XID 79: fell off the bus", SomeTelemetry(1)});
  hb.gpus.push_back({2, true, "", {}});  // no telemetry this time
  return hb;
}

TEST(NodeProtocolTest, HeartbeatRoundTrips) {
  const Heartbeat hb = FullHeartbeat();
  auto back = HeartbeatFromJson(Wire(ToJson(hb)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->running, hb.running);
  ASSERT_EQ(back->events.size(), 3u);
  for (size_t i = 0; i < hb.events.size(); ++i) {
    EXPECT_EQ(back->events[i].job, hb.events[i].job);
    EXPECT_EQ(back->events[i].epoch, hb.events[i].epoch);
    EXPECT_EQ(back->events[i].step, hb.events[i].step);
    EXPECT_EQ(back->events[i].kind, hb.events[i].kind);
    EXPECT_EQ(back->events[i].exit_code, hb.events[i].exit_code);
    EXPECT_EQ(back->events[i].signal, hb.events[i].signal);
    EXPECT_EQ(back->events[i].message, hb.events[i].message);
    EXPECT_EQ(back->events[i].ended, hb.events[i].ended);
  }
  EXPECT_TRUE(back->has_gpus);
  ASSERT_EQ(back->gpus.size(), 3u);
  for (size_t i = 0; i < hb.gpus.size(); ++i) {
    const GpuReport& a = hb.gpus[i];
    const GpuReport& b = back->gpus[i];
    EXPECT_EQ(b.index, a.index);
    EXPECT_EQ(b.healthy, a.healthy);
    EXPECT_EQ(b.health_reason, a.health_reason);
    const GpuTelemetry& s = a.telemetry;
    const GpuTelemetry& t = b.telemetry;
    EXPECT_EQ(t.present, s.present) << i;
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
    EXPECT_EQ(t.clock_events, s.clock_events);
  }
}

// The extra beats that report a step's end at once carry no GPUs: the
// server keeps the last ones.
TEST(NodeProtocolTest, AHeartbeatWithoutGpusSaysSo) {
  Heartbeat hb = FullHeartbeat();
  hb.has_gpus = false;
  const Json j = ToJson(hb);
  EXPECT_FALSE(j.contains("gpus"));
  auto back = HeartbeatFromJson(Wire(j));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->has_gpus);
  EXPECT_TRUE(back->gpus.empty());
  EXPECT_EQ(back->events.size(), 3u);
  // What curl-driven tests and older agents send: a bare exit, no signal.
  auto bare = HeartbeatFromJson(
      Wire({{"running", Json::array()},
            {"events", {{{"type", "exited"}, {"job", 1}, {"epoch", 1}, {"exit_code", 0}}}},
            {"gpus", Json::array()}}));
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_TRUE(bare->has_gpus);
  EXPECT_EQ(bare->events[0].signal, 0);
}

struct Mutation {
  const char* what;
  std::function<void(Json&)> change;
  const char* error;  // a part of the message
};

// Applies each mutation to `valid` and expects `decode` to refuse it with
// an error that contains the mutation's text.
template <typename Decode>
void ExpectRefusals(const Json& valid, Decode decode, const std::vector<Mutation>& mutations) {
  ASSERT_TRUE(decode(valid).ok()) << decode(valid).status().ToString();
  for (const Mutation& m : mutations) {
    Json j = valid;
    m.change(j);
    auto r = decode(Wire(j));
    ASSERT_FALSE(r.ok()) << m.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << m.what;
    EXPECT_NE(r.status().message().find(m.error), std::string::npos)
        << m.what << ": " << r.status().message();
  }
}

TEST(NodeProtocolTest, HeartbeatDecoderIsStrict) {
  const Json valid = ToJson(FullHeartbeat());
  ExpectRefusals(
      valid, HeartbeatFromJson,
      {
          {"a renamed telemetry key",
           [](Json& j) {
             Json& g = j["gpus"][0];
             g["utilization"] = g["util"];
             g.erase("util");
           },
           "heartbeat.gpus[0]: unknown field 'utilization' (heartbeat.gpus[0].util is missing)"},
          {"a telemetry key left out", [](Json& j) { j["gpus"][1].erase("clock_events"); },
           "heartbeat.gpus[1].clock_events is missing"},
          {"telemetry of the wrong type", [](Json& j) { j["gpus"][0]["util"] = "high"; },
           "heartbeat.gpus[0].util must be a number"},
          {"a counter below zero", [](Json& j) { j["gpus"][0]["ecc_corrected"] = -1; },
           "heartbeat.gpus[0].ecc_corrected must be a non-negative integer"},
          {"utilisation past 100", [](Json& j) { j["gpus"][0]["util"] = 150; },
           "heartbeat.gpus[0].util must be 0 to 100"},
          {"an exit before 1970", [](Json& j) { j["events"][0]["ended"] = -5; },
           "heartbeat.events[0].ended must be Unix seconds"},
          {"an unknown top-level field", [](Json& j) { j["colour"] = "red"; },
           "heartbeat: unknown field 'colour'"},
          {"an unknown GPU field", [](Json& j) { j["gpus"][2]["fan"] = 40; },
           "heartbeat.gpus[2]: unknown field 'fan'"},
          {"gpus not a list", [](Json& j) { j["gpus"] = 3; }, "heartbeat.gpus must be a list"},
          {"too many GPUs",
           [](Json& j) {
             j["gpus"] = Json::array();
             for (int i = 0; i <= kMaxGpusPerNode; ++i)
               j["gpus"].push_back({{"index", i}, {"healthy", true}});
           },
           "heartbeat.gpus has 65 entries; at most 64"},
          {"a GPU index out of range", [](Json& j) { j["gpus"][2]["index"] = 64; },
           "heartbeat.gpus[2].index must be 0 to 63"},
          {"a GPU twice", [](Json& j) { j["gpus"][2]["index"] = 0; },
           "heartbeat.gpus[2]: GPU 0 is reported twice"},
          {"a GPU without an index", [](Json& j) { j["gpus"][2].erase("index"); },
           "heartbeat.gpus[2].index is missing"},
          {"an event of an unknown type", [](Json& j) { j["events"][0]["type"] = "finished"; },
           "heartbeat.events[0].type must be \"started\" or \"exited\""},
          {"an event without its epoch", [](Json& j) { j["events"][1].erase("epoch"); },
           "heartbeat.events[1].epoch is missing"},
          {"a signal out of range", [](Json& j) { j["events"][0]["signal"] = 300; },
           "heartbeat.events[0].signal must be 0 to 127"},
          {"a running job id as text", [](Json& j) { j["running"][0]["job"] = "1"; },
           "heartbeat.running[0].job must be a non-negative integer"},
          {"a negative progress", [](Json& j) { j["running"][0]["progress"] = -1; },
           "heartbeat.running[0].progress must be 0 to 1e+15 (units a second)"},
          {"a progress past the limit", [](Json& j) { j["running"][0]["progress"] = 1e300; },
           "heartbeat.running[0].progress must be 0 to 1e+15 (units a second)"},
          {"not an object", [](Json& j) { j = Json::array(); }, "heartbeat must be a JSON object"},
      });
}

TEST(NodeProtocolTest, LaunchDecoderIsStrict) {
  const Json valid = ToJson(FullLaunch());
  ExpectRefusals(
      valid, LaunchFromJson,
      {
          {"an unknown field", [](Json& j) { j["colour"] = "red"; },
           "launch: unknown field 'colour'"},
          {"a misspelt field",
           [](Json& j) {
             j["epoc"] = j["epoch"];
             j.erase("epoch");
           },
           "launch: unknown field 'epoc' (launch.epoch is missing)"},
          {"no nodes", [](Json& j) { j.erase("nodes"); }, "launch.nodes is missing"},
          {"a rank as text", [](Json& j) { j["node_rank"] = "1"; },
           "launch.node_rank must be an integer"},
          {"a rank past the nodes", [](Json& j) { j["node_rank"] = 2; },
           "launch.node_rank must be 0 to 1, not 2"},
          {"addresses that do not match", [](Json& j) { j["addresses"].erase(1); },
           "launch.addresses has 1 entries for 2 nodes"},
          {"CPUs for one node of two", [](Json& j) { j["node_cpus"] = Json::array({4}); },
           "launch.node_cpus has 1 entries for 2 nodes"},
          {"a node without CPUs",
           [](Json& j) {
             j["node_cpus"] = Json::array({4, 0});
           },
           "launch.node_cpus[1] must be a CPU count of at least one"},
          {"a port out of range", [](Json& j) { j["master_port"] = 70000; },
           "launch.master_port must be 0 to 65535"},
          {"an array task without its array", [](Json& j) { j.erase("array_job_id"); },
           "launch.array_job_id is missing"},
          {"a deadline past 2286", [](Json& j) { j["not_after"] = 1e12; }, "launch.not_after"},
          {"a spec with an unknown field", [](Json& j) { j["spec"]["gpu"] = 1; },
           "launch.spec: job: unknown field 'gpu'"},
          {"a GPU index out of range", [](Json& j) { j["allocation"]["gpus"] = Json::array({64}); },
           "launch.allocation.gpus: a GPU index is out of range"},
          {"an allocation with an unknown field", [](Json& j) { j["allocation"]["gpu"] = 1; },
           "launch.allocation: unknown field 'gpu'"},
      });
}

TEST(NodeProtocolTest, KillDecoderIsStrict) {
  const Json valid = ToJson(KillMessage{.job = JobId(9), .epoch = 2, .why = "cancelled"});
  ExpectRefusals(
      valid, KillFromJson,
      {
          {"an unknown field", [](Json& j) { j["reason"] = "x"; }, "kill: unknown field 'reason'"},
          {"no job", [](Json& j) { j.erase("job"); }, "kill.job is missing"},
          {"why as a number", [](Json& j) { j["why"] = 3; }, "kill.why must be a string"},
          {"a grace past an hour", [](Json& j) { j["grace_s"] = 4000; },
           "kill.grace_s must be 0 to 3600"},
          {"a negative grace", [](Json& j) { j["grace_s"] = -1; },
           "kill.grace_s must be 0 to 3600"},
          {"signal 65", [](Json& j) { j["signal"] = 65; }, "kill.signal must be 1 to 64, not 65"},
          {"a signal name", [](Json& j) { j["signal"] = "USR1"; }, "kill.signal must be"},
      });
}

TEST(NodeProtocolTest, RegistrationIsTheNodeWithItsAddress) {
  Node n;
  n.name = "gpu01";
  n.address = "127.0.0.1:6821";
  n.cpu_milli = 64000;
  Gpu& gpu = n.gpus.emplace_back();
  gpu.uuid = "GPU-0";
  gpu.model = "H100-SXM-80GB";
  gpu.memory_mib = 81920;
  n.boot_id = "0b2f6c4e-8d1a-4e57-9c43-5f0a7e9b1d22";
  const Json j = RegistrationToJson(n);
  Json bare = j;
  bare.erase("protocol");
  EXPECT_EQ(bare, ToJson(n)) << "the node's own form, and the protocol version";
  EXPECT_EQ(j["protocol"], kNodeProtocol);
  auto back = RegistrationFromJson(Wire(j));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->name, "gpu01");
  EXPECT_EQ(back->address, n.address);
  ASSERT_EQ(back->gpus.size(), 1u);
  EXPECT_EQ(back->gpus[0].model, "H100-SXM-80GB");
  EXPECT_EQ(back->boot_id, n.boot_id);
  ExpectRefusals(j, RegistrationFromJson,
                 {
                     {"no address", [](Json& r) { r.erase("address"); }, "node.address"},
                     {"a long boot id", [](Json& r) { r["boot_id"] = std::string(65, 'b'); },
                      "node: boot_id is over 64 characters"},
                     {"an unknown GPU field", [](Json& r) { r["gpus"][0]["colour"] = 1; },
                      "node.gpus[0]: unknown field 'colour'"},
                 });
}

// Adjacent versions work together: a message of the next version decodes with
// the fields it adds ignored; one of the previous version (or of none: 1)
// decodes strictly as before; further apart is refused, naming both.
TEST(NodeProtocolTest, AdjacentProtocolVersionsWorkTogether) {
  Heartbeat hb;
  hb.running.push_back({JobId(7), 1});
  Json newer = ToJson(hb);
  EXPECT_EQ(newer["protocol"], kNodeProtocol);
  newer["protocol"] = kNodeProtocol + 1;
  newer["colour"] = "red";
  newer["running"][0]["priority_hint"] = 3;
  auto read = HeartbeatFromJson(Wire(newer));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->running.size(), 1u);
  EXPECT_EQ(read->running[0].job, JobId(7));

  Json older = newer;
  older.erase("protocol");  // version 1: before versions
  EXPECT_EQ(HeartbeatFromJson(Wire(older)).status().message(),
            "heartbeat.running[0]: unknown field 'priority_hint'");
  older["protocol"] = kNodeProtocol;
  EXPECT_FALSE(HeartbeatFromJson(Wire(older)).ok()) << "its own version stays strict";

  Json far = ToJson(hb);
  far["protocol"] = kNodeProtocol + 2;
  EXPECT_EQ(HeartbeatFromJson(Wire(far)).status().message(),
            fmt::format("the peer speaks node protocol {} and this shoal speaks {}: only adjacent "
                        "versions work together (upgrade the controller first, then the agents)",
                        kNodeProtocol + 2, kNodeProtocol));
  far["protocol"] = "2";
  EXPECT_EQ(HeartbeatFromJson(Wire(far)).status().message(), "protocol must be an integer");

  // The same for the other messages, nested decoders included.
  Node n;
  n.name = "gpu01";
  n.address = "127.0.0.1:6821";
  Gpu& gpu = n.gpus.emplace_back();
  gpu.uuid = "GPU-0";
  gpu.model = "H100-SXM-80GB";
  gpu.memory_mib = 81920;
  Json reg = RegistrationToJson(n);
  reg["protocol"] = kNodeProtocol + 1;
  reg["gpus"][0]["mig_mode"] = false;
  auto node = RegistrationFromJson(Wire(reg));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->gpus[0].uuid, "GPU-0");
  reg["protocol"] = kNodeProtocol - 2;
  EXPECT_FALSE(RegistrationFromJson(Wire(reg)).ok());

  KillMessage k;
  k.job = JobId(3);
  k.epoch = 1;
  Json kill = ToJson(k);
  kill["protocol"] = kNodeProtocol + 1;
  kill["reason_code"] = 9;
  EXPECT_TRUE(KillFromJson(Wire(kill)).ok());
  kill["protocol"] = kNodeProtocol;
  EXPECT_FALSE(KillFromJson(Wire(kill)).ok());
}

}  // namespace
}  // namespace shoal::api
