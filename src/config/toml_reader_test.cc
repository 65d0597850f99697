#include "config/toml_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace shoal::config {
namespace {

// The error of reading `text` with `read`, or "" when it succeeds.
template <typename Read>
std::string ErrorOf(std::string_view text, Read read) {
  auto doc = TomlDocument::Parse(text, "t.toml");
  if (!doc.ok()) return doc.status().message();
  Status s = read(doc->Root());
  return s.ok() ? "" : s.message();
}

TEST(TomlReaderTest, UnknownKeySuggestsTheNearestName) {
  EXPECT_EQ(ErrorOf("name = 1\ncount = 2\ncuont = 3\n",
                    [](const TableReader& r) {
                      return r.CheckKeys({"name", "count"});
                    }),
            "t.toml:3: unknown key 'cuont' (did you mean 'count'?)");
  // In a named table, the table's name comes first.
  EXPECT_EQ(ErrorOf("[[nodes]]\ngpus = 1\n[[nodes]]\ngpu = 2\n",
                    [](const TableReader& r) -> Status {
                      SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> nodes, r.Tables("nodes"));
                      for (const TableReader& n : nodes)
                        SHOAL_RETURN_IF_ERROR(n.CheckKeys({"gpus", "cpus"}));
                      return Status::Ok();
                    }),
            "t.toml:4: nodes[2]: unknown key 'gpu' (did you mean 'gpus'?)");
}

TEST(TomlReaderTest, UnknownKeyFarFromAnyListsTheKnownOnes) {
  EXPECT_EQ(ErrorOf("[server]\nzebra = 1\n",
                    [](const TableReader& r) -> Status {
                      SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> t, r.Table("server"));
                      return t->CheckKeys({"listen", "state_dir"});
                    }),
            "t.toml:2: server: unknown key 'zebra' (known: listen, state_dir)");
}

TEST(TomlReaderTest, TheFirstUnknownKeyInTheFileIsReported) {
  // toml++ sorts keys; the error names the one a reader meets first.
  EXPECT_EQ(ErrorOf("zz = 1\naa = 2\n", [](const TableReader& r) { return r.CheckKeys({"b"}); }),
            "t.toml:1: unknown key 'zz' (known: b)");
}

TEST(TomlReaderTest, WrongTypeNamesTheKeyAndLine) {
  const std::string text = "[[nodes]]\nname = 3\ncount = \"16\"\nup = \"yes\"\nshares = true\n";
  auto node = [](auto get) {
    return [get](const TableReader& r) -> Status {
      SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> nodes, r.Tables("nodes"));
      return get(nodes.at(0));
    };
  };
  EXPECT_EQ(ErrorOf(text, node([](const TableReader& r) { return r.String("name").status(); })),
            "t.toml:2: nodes[1].name: must be a string");
  EXPECT_EQ(
      ErrorOf(text, node([](const TableReader& r) { return r.Int("count", 1, 10).status(); })),
      "t.toml:3: nodes[1].count: must be an integer");
  EXPECT_EQ(ErrorOf(text, node([](const TableReader& r) { return r.Bool("up").status(); })),
            "t.toml:4: nodes[1].up: must be true or false");
  EXPECT_EQ(ErrorOf(text, node([](const TableReader& r) { return r.Number("shares").status(); })),
            "t.toml:5: nodes[1].shares: must be a number");
  EXPECT_EQ(ErrorOf(text, node([](const TableReader& r) { return r.StringList("name").status(); })),
            "t.toml:2: nodes[1].name: must be a list of strings, e.g. [\"a\", \"b\"]");
  EXPECT_EQ(
      ErrorOf("a = 1\nb = 0\n", [](const TableReader& r) { return r.Int("b", 1, 8).status(); }),
      "t.toml:2: b: 0 is out of range [1, 8]");
}

TEST(TomlReaderTest, BadDurationNamesTheKey) {
  EXPECT_EQ(ErrorOf("[p]\nmax_time = \"7 days\"\n",
                    [](const TableReader& r) -> Status {
                      SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> p, r.Table("p"));
                      return p->TimeLimit("max_time").status();
                    })
                .rfind("t.toml:2: p.max_time: ", 0),
            0u);
  EXPECT_EQ(ErrorOf("t = -5\n", [](const TableReader& r) { return r.TimeLimit("t").status(); }),
            "t.toml:1: t: must not be negative");
  EXPECT_EQ(ErrorOf("t = 1.5\n", [](const TableReader& r) { return r.TimeLimit("t").status(); }),
            "t.toml:1: t: must be a time such as \"1-00:00:00\" or \"4h\"");
}

TEST(TomlReaderTest, DurationsAndSizes) {
  auto doc = TomlDocument::Parse(
      "a = \"1-00:00:00\"\nb = \"4h\"\nc = 90\nm = \"80G\"\nn = 512\nbad = \"32X\"\n", "t.toml");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const TableReader r = doc->Root();
  EXPECT_EQ(**r.TimeLimit("a"), std::chrono::hours(24));
  EXPECT_EQ(**r.TimeLimit("b"), std::chrono::hours(4));
  EXPECT_EQ(**r.TimeLimit("c"), std::chrono::minutes(90)) << "an integer is minutes";
  EXPECT_FALSE(r.TimeLimit("absent")->has_value());
  EXPECT_EQ(**r.MemoryMib("m"), 80 * 1024);
  EXPECT_EQ(**r.MemoryMib("n"), 512) << "an integer is MiB";
  auto bad = r.MemoryMib("bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("t.toml:6: bad: '32X' has an unknown memory unit", 0), 0u)
      << bad.status().message();
}

TEST(TomlReaderTest, TablesAndArraysOfTables) {
  EXPECT_EQ(ErrorOf("[partition]\nname = \"a\"\n",
                    [](const TableReader& r) { return r.Tables("partition").status(); }),
            "t.toml:1: partition: write [[partition]] (a list of tables), not [partition]");
  EXPECT_EQ(ErrorOf("[c]\ngpu_price = 3\n",
                    [](const TableReader& r) -> Status {
                      SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> c, r.Table("c"));
                      return c->Table("gpu_price").status();
                    }),
            "t.toml:2: c.gpu_price: must be a table, written [c.gpu_price]");
  auto doc = TomlDocument::Parse("[[a]]\nx = 1\n[[a]]\nx = 2\n", "t.toml");
  ASSERT_TRUE(doc.ok());
  auto tables = doc->Root().Tables("a");
  ASSERT_TRUE(tables.ok());
  ASSERT_EQ(tables->size(), 2u);
  EXPECT_EQ((*tables)[1].name(), "a[2]");
  EXPECT_EQ(**(*tables)[1].Int("x", 0, 9), 2);
  EXPECT_TRUE(doc->Root().Tables("none")->empty());
}

TEST(TomlReaderTest, SettingsAsText) {
  auto doc = TomlDocument::Parse(
      "s = \"x\"\ni = 3\nf = 2.5\nb = true\nl = [\"a\", \"b\"]\nbad = [1]\nt = {a = 1}\n",
      "t.toml");
  ASSERT_TRUE(doc.ok());
  const TableReader r = doc->Root();
  EXPECT_EQ(**r.Text("s"), "x");
  EXPECT_EQ(**r.Text("i"), "3");
  EXPECT_EQ(**r.Text("f"), "2.5");
  EXPECT_EQ(**r.Text("b"), "true") << "not 1";
  EXPECT_EQ(**r.Text("l"), "a,b");
  EXPECT_FALSE(r.Text("bad").ok());
  EXPECT_EQ(r.Text("t").status().message(),
            "t.toml:7: t: must be a string, number, boolean or list of strings");
  EXPECT_EQ(r.Keys(), (std::vector<std::string>{"s", "i", "f", "b", "l", "bad", "t"}))
      << "keys in file order";
}

Result<double> Half(std::string_view s) {
  if (s != "half") return InvalidArgument(fmt::format("'{}' is not half", s));
  return 0.5;
}

TEST(TomlReaderTest, ParsedValues) {
  auto doc = TomlDocument::Parse("a = \"half\"\nb = \"full\"\nc = 3\nd = true\n", "t.toml");
  ASSERT_TRUE(doc.ok());
  const TableReader r = doc->Root();
  EXPECT_EQ(**r.Parsed<double>("a", Half), 0.5);
  EXPECT_EQ(r.Parsed<double>("b", Half).status().message(), "t.toml:2: b: 'full' is not half");
  EXPECT_EQ(**r.NumberOrText("a", Half), 0.5);
  EXPECT_EQ(**r.NumberOrText("c", Half), 3);
  EXPECT_FALSE(r.NumberOrText("d", Half).ok());
}

TEST(TomlReaderTest, SyntaxErrorsAndMissingFiles) {
  auto doc = TomlDocument::Parse("a = 1\nb = \"open\n", "t.toml");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().message().rfind("t.toml:2:", 0), 0u) << doc.status().message();
  auto missing = TomlDocument::Load("/nonexistent/shoal.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal::config
