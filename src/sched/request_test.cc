#include "sched/request.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace shoal::sched {
namespace {

TEST(RequestTest, ConstraintChoicesLetEachNodeHaveEither) {
  testing::ClusterBuilder cb;
  cb.AddPartition("gpu", true);
  cb.Node("h1").Gpus(8, "H100-SXM-80GB").Partitions({"gpu"}).Labels({"ib", "h100"});
  cb.Node("a1").Gpus(8, "A100-SXM4-80GB").Partitions({"gpu"}).Labels({"ib", "a100"});
  cb.Node("a2").Gpus(8, "A100-SXM4-80GB").Partitions({"gpu"}).Labels({"a100"});
  auto inv = cb.Inventory();
  JobSpec s;
  s.gpus = 8;
  s.command = "x";
  s.constraints = {"h100|a100|v100", "ib"};  // (h100 or a100 or v100) and ib
  auto r = CompileRequest(*inv, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::string> eligible;
  for (NodeIndex n = 0; n < inv->size(); ++n) {
    if (NodeEligible(inv->node(n), *r)) eligible.push_back(inv->node(n).name);
  }
  EXPECT_EQ(eligible, (std::vector<std::string>{"h1", "a1"}));
  s.constraints = {"b200|v100"};
  auto none = CompileRequest(*inv, s);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no node has any of the labels 'b200|v100'"),
            std::string::npos);
  // Two requests that differ only in their choices are not the same shape.
  s.constraints = {"h100|a100"};
  auto other = CompileRequest(*inv, s);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->SameShape(*r));
}

// MIG slices are GPUs of their own, taken only by a job that names their
// profile; a job that names no model takes whole GPUs.
TEST(RequestTest, MigSlicesGoOnlyToJobsThatNameTheirProfile) {
  testing::ClusterBuilder cb;
  cb.AddPartition("gpu", true);
  cb.Node("m1").Gpus(7, "H100-SXM-80GB/1g.10gb").Partitions({"gpu"});
  cb.Node("h1").Gpus(8, "H100-SXM-80GB").Partitions({"gpu"});
  auto inv = cb.Inventory();
  auto eligible = [&](const std::vector<std::string>& models) {
    JobSpec s;
    s.gpus = 2;
    s.command = "x";
    s.gpu_models = models;
    auto r = CompileRequest(*inv, s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> out;
    for (NodeIndex n = 0; r.ok() && n < inv->size(); ++n) {
      if (NodeEligible(inv->node(n), *r)) out.push_back(inv->node(n).name);
    }
    return out;
  };
  EXPECT_EQ(eligible({}), (std::vector<std::string>{"h1"}));
  EXPECT_EQ(eligible({"h100"}), (std::vector<std::string>{"h1"}));
  EXPECT_EQ(eligible({"1g.10gb"}), (std::vector<std::string>{"m1"}));
  EXPECT_EQ(eligible({"h100/1g.10gb"}), (std::vector<std::string>{"m1"}));

  testing::ClusterBuilder sliced;
  sliced.AddPartition("gpu", true);
  sliced.Node("m1").Gpus(7, "H100-SXM-80GB/1g.10gb").Partitions({"gpu"});
  auto only_slices = sliced.Inventory();
  JobSpec s;
  s.gpus = 1;
  s.command = "x";
  auto r = CompileRequest(*only_slices, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("every GPU of the cluster is a MIG slice: name a profile, as in "
                                "--gres=gpu:1g.10gb:1 (the cluster has: H100-SXM-80GB/1g.10gb)"),
      std::string::npos)
      << r.status().message();
  s.gpus = 0;
  s.cpu_milli_per_node = 1000;
  EXPECT_TRUE(CompileRequest(*only_slices, s).ok()) << "a CPU job needs no GPU model";
}

// --constraint [a|b]: a node with either is eligible, but all of a job's
// nodes share one; the request is satisfiable when one choice is.
TEST(RequestTest, MatchingChoicesNeedOneLabelOnEveryNode) {
  testing::ClusterBuilder cb;
  cb.AddPartition("gpu", true);
  cb.Node("a1").Partitions({"gpu"}).Labels({"rackA"});
  cb.Node("a2").Partitions({"gpu"}).Labels({"rackA"});
  cb.Node("b1").Partitions({"gpu"}).Labels({"rackB"});
  cb.Node("c1").Partitions({"gpu"});
  auto inv = cb.Inventory();
  JobSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.command = "x";
  s.constraints = {"[rackB|rackA|rackZ]"};
  auto r = CompileRequest(*inv, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->matching_choices.size(), 2u) << "rackZ: no node has it";
  std::vector<std::string> eligible;
  for (NodeIndex n = 0; n < inv->size(); ++n) {
    if (NodeEligible(inv->node(n), *r)) eligible.push_back(inv->node(n).name);
  }
  EXPECT_EQ(eligible, (std::vector<std::string>{"a1", "a2", "b1"}));
  EXPECT_TRUE(CheckSatisfiable(*inv, *r).ok()) << "rackA has two nodes";
  EXPECT_TRUE(NodeEligible(inv->node(2), r->WithChoice(0)));   // b1 for rackB
  EXPECT_FALSE(NodeEligible(inv->node(0), r->WithChoice(0)));  // a1 is not in rackB
  s.nodes = 3;
  auto three = CompileRequest(*inv, s);
  ASSERT_TRUE(three.ok());
  const Status no = CheckSatisfiable(*inv, *three);
  EXPECT_EQ(no.code(), StatusCode::kUnsatisfiable) << "three nodes of one rack: none has them";
  EXPECT_NE(no.message().find("every node needs the same one"), std::string::npos) << no.message();
  // The plain choice a|b is another shape.
  s.nodes = 2;
  s.constraints = {"rackB|rackA|rackZ"};
  auto plain = CompileRequest(*inv, s);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->matching_choices.empty());
  EXPECT_FALSE(plain->SameShape(*r));
  EXPECT_NE(plain->ShapeHash(), r->ShapeHash());
}

// --constraint [a*2&b*3] (Slurm's node counts): the counts are the node count
// when -N is not given, every node needs one of the counted labels, and a
// label with too few nodes can never run; a*2 asks for at least so many.
TEST(RequestTest, ConstraintCountsCompileToCountedLabels) {
  testing::ClusterBuilder cb;
  cb.AddPartition("gpu", true);
  for (const char* name : {"p1", "p2"})
    cb.Node(name).Partitions({"gpu"}).Labels({"rack1"});
  for (const char* name : {"q1", "q2", "q3"})
    cb.Node(name).Partitions({"gpu"}).Labels({"rack2"});
  cb.Node("x1").Partitions({"gpu"});
  auto inv = cb.Inventory();
  JobSpec s;
  s.gpus_per_node = 8;
  s.command = "x";
  s.constraints = {"[rack1*2&rack2*3]"};
  auto r = CompileRequest(*inv, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->shape, Shape::kGang);
  EXPECT_EQ(r->nodes, 5);
  EXPECT_EQ(r->total_gpus, 40);
  ASSERT_EQ(r->label_counts.size(), 2u);
  EXPECT_EQ(inv->LabelNames(r->label_counts[0].label), "rack1");
  EXPECT_EQ(r->label_counts[0].count, 2);
  EXPECT_EQ(inv->LabelNames(r->label_counts[1].label), "rack2");
  EXPECT_EQ(r->label_counts[1].count, 3);
  auto eligible = [&](const Request& req) {
    std::vector<std::string> out;
    for (NodeIndex n = 0; n < inv->size(); ++n) {
      if (NodeEligible(inv->node(n), req)) out.push_back(inv->node(n).name);
    }
    return out;
  };
  EXPECT_EQ(eligible(*r), (std::vector<std::string>{"p1", "p2", "q1", "q2", "q3"}));
  EXPECT_TRUE(CheckSatisfiable(*inv, *r).ok());

  // Other counts are another shape.
  s.constraints = {"[rack1*1&rack2*4]"};
  auto other = CompileRequest(*inv, s);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_FALSE(other->SameShape(*r));
  EXPECT_NE(other->ShapeHash(), r->ShapeHash());

  // More nodes with a label than the cluster has: refused, saying which.
  s.constraints = {"[rack1*3&rack2*1]"};
  auto three = CompileRequest(*inv, s);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  const Status no = CheckSatisfiable(*inv, *three);
  EXPECT_EQ(no.code(), StatusCode::kUnsatisfiable);
  EXPECT_EQ(no.message(),
            "asks for 3 nodes with label 'rack1'; partition 'gpu' has 2 nodes with it that fit");
  s.constraints = {"[rack1*1&rack9*1]"};
  auto unknown = CompileRequest(*inv, s);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "no node has label 'rack9'");

  // A node count that disagrees with the counts, and counts beside other labels.
  s.nodes = 4;
  s.constraints = {"[rack1*2&rack2*3]"};
  auto four = CompileRequest(*inv, s);
  ASSERT_FALSE(four.ok());
  EXPECT_NE(four.status().message().find("asks for 5 nodes and the job for 4"), std::string::npos)
      << four.status().message();
  s.nodes = 0;
  s.constraints = {"ib", "[rack1*1&rack2*1]"};
  auto beside = CompileRequest(*inv, s);
  ASSERT_FALSE(beside.ok());
  EXPECT_NE(beside.status().message().find("label counts stand alone"), std::string::npos)
      << beside.status().message();

  // a*2 with -N 4: at least two of the four have rack1; any node may be another.
  s.nodes = 4;
  s.constraints = {"rack1*2"};
  auto at_least = CompileRequest(*inv, s);
  ASSERT_TRUE(at_least.ok()) << at_least.status().ToString();
  EXPECT_EQ(at_least->nodes, 4);
  EXPECT_EQ(eligible(*at_least).size(), 6u);
  EXPECT_TRUE(CheckSatisfiable(*inv, *at_least).ok());
  s.nodes = 0;
  auto two = CompileRequest(*inv, s);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->nodes, 2) << "without -N, as many nodes as counted";
}

TEST(RequestTest, ShapesAndErrorsByTable) {
  testing::ClusterBuilder cb;
  cb.AddPartition("gpu", true).default_time = std::chrono::hours(2);
  cb.Node("h1").Gpus(8, "H100-SXM-80GB").Partitions({"gpu"}).Labels({"ib"});
  cb.Node("a1").Gpus(4, "A100-SXM4-80GB").Partitions({"gpu"});
  auto inv = cb.Inventory();
  struct Case {
    const char* what;
    JobSpec spec;
    bool compiles;
    Shape shape;
    bool satisfiable;
    const char* message;  // part of the error, when there is one
  };
  auto spec = [](auto&& f) {
    JobSpec s;
    f(s);
    return s;
  };
  Case cases[] = {
      {"4 GPUs anywhere", spec([](JobSpec& s) { s.gpus = 4; }), true, Shape::kSpread, true, ""},
      {"2x8 gang", spec([](JobSpec& s) {
         s.nodes = 2;
         s.gpus_per_node = 8;
       }),
       true, Shape::kGang, false, "has 1"},
      {"16 over 2 nodes", spec([](JobSpec& s) {
         s.nodes = 2;
         s.gpus = 16;
       }),
       true, Shape::kGang, false, ""},
      {"uneven split", spec([](JobSpec& s) {
         s.nodes = 3;
         s.gpus = 16;
       }),
       false, Shape::kGang, false, "evenly"},
      {"CPU only", spec([](JobSpec& s) { s.cpu_milli_per_node = 4000; }), true, Shape::kCpuOnly,
       true, ""},
      {"too many CPUs", spec([](JobSpec& s) { s.cpu_milli_per_node = 400000; }), true,
       Shape::kCpuOnly, false, "CPUs"},
      {"unknown model", spec([](JobSpec& s) {
         s.gpus = 1;
         s.gpu_models = {"B200"};
       }),
       false, Shape::kGang, false, "B200"},
      {"A100 x 8 on one node", spec([](JobSpec& s) {
         s.nodes = 1;
         s.gpus_per_node = 8;
         s.gpu_models = {"a100"};
       }),
       true, Shape::kGang, false, "has 4"},
      {"unknown label", spec([](JobSpec& s) {
         s.gpus = 1;
         s.constraints = {"nvme"};
       }),
       false, Shape::kGang, false, "nvme"},
      {"label", spec([](JobSpec& s) {
         s.gpus = 8;
         s.constraints = {"ib"};
       }),
       true, Shape::kSpread, true, ""},
      {"unknown partition", spec([](JobSpec& s) {
         s.gpus = 1;
         s.partition = "cpu";
       }),
       false, Shape::kGang, false, "cpu"},
      {"12 GPUs spread", spec([](JobSpec& s) { s.gpus = 12; }), true, Shape::kSpread, true, ""},
      {"a listed node that is not there", spec([](JobSpec& s) {
         s.gpus = 1;
         s.node_list = {"h1", "zz"};
       }),
       false, Shape::kGang, false, "--nodelist: no node is named 'zz'"},
      {"an excluded node that is not there", spec([](JobSpec& s) {
         s.gpus = 1;
         s.exclude = {"zz"};
       }),
       false, Shape::kGang, false, "--exclude: no node is named 'zz'"},
      {"listed nodes: a gang over them", spec([](JobSpec& s) {
         s.gpus = 8;
         s.node_list = {"h1", "a1"};
       }),
       true, Shape::kGang, true, ""},
      {"8 GPUs with the H100 node excluded", spec([](JobSpec& s) {
         s.gpus = 8;
         s.exclude = {"h1"};
       }),
       true, Shape::kSpread, false, "has 4"},
      {"13 GPUs spread", spec([](JobSpec& s) { s.gpus = 13; }), true, Shape::kSpread, false,
       "has 12"},
  };
  for (const Case& k : cases) {
    const Case& c = k;
    auto r = CompileRequest(*inv, c.spec);
    EXPECT_EQ(r.ok(), c.compiles) << c.what << ": " << r.status().ToString();
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(c.message), std::string::npos)
          << c.what << ": " << r.status().message();
      continue;
    }
    EXPECT_EQ(r->shape, c.shape) << c.what;
    EXPECT_EQ(r->time_limit, std::chrono::hours(2)) << c.what << ": the partition's default";
    Status sat = CheckSatisfiable(*inv, *r);
    EXPECT_EQ(sat.ok(), c.satisfiable) << c.what << ": " << sat.ToString();
    if (!sat.ok()) {
      EXPECT_NE(sat.message().find(c.message), std::string::npos)
          << c.what << ": " << sat.message();
    }
  }
}

TEST(RequestTest, CapacityCountsOnlyUsableNodes) {
  testing::ClusterBuilder c;
  c.Node("a");
  c.Node("b");
  auto inv = c.Inventory();
  JobSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  Request r = *CompileRequest(*inv, s);
  std::vector<NodeStatus> status(2);
  EXPECT_TRUE(CheckCapacity(*inv, r, status).ok());
  status[1].state = NodeState::kDrained;
  EXPECT_FALSE(CheckCapacity(*inv, r, status).ok());
  status[1].state = NodeState::kUp;
  status[1].unhealthy_gpus = 1;
  EXPECT_FALSE(CheckCapacity(*inv, r, status).ok()) << "a node with a bad GPU has only 7";
  EXPECT_TRUE(CheckSatisfiable(*inv, r).ok());
}

}  // namespace
}  // namespace shoal::sched
