// The object reader behind every strict parser: errors name the field with
// its path, and unknown fields are refused unless the caller ignores them.
#include "api/json_reader.h"

#include <gtest/gtest.h>

namespace shoal::api {
namespace {

struct Item {
  std::string name;
};

Result<Item> ItemFromJson(const Json& j, const std::string& path) {
  ObjectReader f(j, path);
  Item item;
  f.Required("name", &item.name);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  return item;
}

// Reads {"n": int, "x": number, "tags": [string], "items": [{"name"}]}.
Status Read(const char* text, UnknownFields unknown = UnknownFields::kReject) {
  const Json j = Json::parse(text);
  ObjectReader f(j, "thing", unknown);
  int n = 0;
  double x = 0;
  std::vector<std::string> tags;
  std::vector<Item> items;
  f.Required("n", &n);
  f.Optional("x", &x);
  f.Optional("tags", &tags);
  f.List("items", false, ItemFromJson, &items, 2);
  return f.Finish();
}

TEST(JsonReaderTest, ErrorsNameTheFieldWithItsPath) {
  struct Case {
    const char* text;
    const char* error;  // empty: accepted
  };
  for (const Case& c : std::vector<Case>{
           {R"({"n": 1})", ""},
           {R"({"n": 1, "x": null})", ""},
           {R"({"n": 1, "x": 2.5, "tags": ["a"], "items": [{"name": "a"}]})", ""},
           {R"([])", "thing must be a JSON object"},
           {R"({})", "thing.n is missing"},
           {R"({"n": "1"})", "thing.n must be an integer"},
           {R"({"n": 3000000000})", "thing.n must be a 32-bit integer"},
           {R"({"n": 1, "x": "2"})", "thing.x must be a number"},
           {R"({"n": 1, "tags": ["a", 2]})", "thing.tags must be a list of strings"},
           {R"({"n": 1, "colour": "red"})", "thing: unknown field 'colour'"},
           {R"({"m": 1})", "thing: unknown field 'm' (thing.n is missing)"},
           {R"({"n": 1, "items": {}})", "thing.items must be a list"},
           {R"({"n": 1, "items": [{"name": "a"}, {}]})", "thing.items[1].name is missing"},
           {R"({"n": 1, "items": [{"name": "a", "size": 1}]})",
            "thing.items[0]: unknown field 'size'"},
           {R"({"n": 1, "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})",
            "thing.items has 3 entries; at most 2"},
       }) {
    const Status s = Read(c.text);
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(s.ok()) << c.text << ": " << s.ToString();
      continue;
    }
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(s.message(), c.error) << c.text;
  }
}

TEST(JsonReaderTest, FilesOfNewerBinariesMayCarryMoreFields) {
  EXPECT_TRUE(Read(R"({"n": 1, "colour": "red"})", UnknownFields::kIgnore).ok());
  // Only unknown fields are forgiven.
  EXPECT_EQ(Read(R"({"n": 1, "x": "2"})", UnknownFields::kIgnore).message(),
            "thing.x must be a number");
  EXPECT_EQ(Read(R"({"m": 1})", UnknownFields::kIgnore).message(), "thing.n is missing");
}

TEST(JsonReaderTest, LargeIntegersAreCheckedNotWrapped) {
  const Json j = Json::parse(R"({"u": 18446744073709551615, "i": 18446744073709551615})");
  ObjectReader f(j, "big");
  uint64_t u = 0;
  int64_t i = 0;
  f.Required("u", &u);
  EXPECT_TRUE(f.status().ok());
  EXPECT_EQ(u, UINT64_MAX);
  f.Required("i", &i);
  EXPECT_EQ(f.Finish().message(), "big.i must be a 64-bit integer");
}

}  // namespace
}  // namespace shoal::api
