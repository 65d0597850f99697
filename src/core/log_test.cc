// The log lines' form: fields as text or JSON, values that cannot forge a
// field or a line, and the settings that choose the level and format.
#include "core/log.h"

#include <gtest/gtest.h>

namespace shoal::log {
namespace {

TEST(LogTest, TextLinesQuoteWhatIsNotOnePlainWord) {
  EXPECT_EQ(
      Format("job.state", {{"job", uint64_t{12}}, {"user", "alice"}, {"to", "running"}}, false),
      "job.state job=12 user=alice to=running");
  // A value with a space, a quote, an equals sign or a newline is quoted, so
  // that it cannot pass for another field or start another line.
  EXPECT_EQ(Format("job.state", {{"why", "cancelled by bob"}, {"name", "a=b"}}, false),
            R"(job.state why="cancelled by bob" name="a=b")");
  EXPECT_EQ(Format("e", {{"why", "x\nfake.event user=root"}}, false),
            R"(e why="x\nfake.event user=root")");
  EXPECT_EQ(Format("e", {{"empty", ""}, {"ok", true}, {"ms", 1.5}}, false),
            R"(e empty="" ok=true ms=1.5)");
}

TEST(LogTest, JsonLinesAreFieldsOfOneObject) {
  EXPECT_EQ(Format("http.request",
                   {{"status", 201}, {"path", "/v1/jobs"}, {"who", "alice \"the\" user"}}, true),
            R"("event":"http.request","status":201,"path":"/v1/jobs","who":"alice \"the\" user")");
  EXPECT_EQ(Format("e", {{"x", "tab\there\x01"}}, true), R"("event":"e","x":"tab\there\u0001")");
  EXPECT_EQ(Format("e", {{"nan", 0.0 / 0.0}}, true), R"("event":"e","nan":null)");
}

TEST(LogTest, LevelsAndFormatsFromSettings) {
  Options o;
  EXPECT_EQ(o.level, Level::kInfo);
  EXPECT_FALSE(o.json);
  EXPECT_TRUE(*ApplySetting("log_level", "debug", o));
  EXPECT_EQ(o.level, Level::kDebug);
  EXPECT_TRUE(*ApplySetting("log_level", "warn", o));
  EXPECT_EQ(o.level, Level::kWarning);
  EXPECT_TRUE(*ApplySetting("log_format", "json", o));
  EXPECT_TRUE(o.json);
  EXPECT_FALSE(*ApplySetting("listen", "127.0.0.1:1", o)) << "not a log setting";
  EXPECT_EQ(ApplySetting("log_level", "loud", o).status().message(),
            "log_level: 'loud' is not a log level (debug, info, warning, error)");
  EXPECT_EQ(ApplySetting("log_format", "xml", o).status().message(), "log_format: text or json");

  Configure({.level = Level::kWarning});
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kError));
  Configure({});
  EXPECT_TRUE(Enabled(Level::kInfo));
  EXPECT_FALSE(Enabled(Level::kDebug));
}

}  // namespace
}  // namespace shoal::log
