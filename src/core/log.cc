#include "core/log.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>

#include "core/strings.h"

namespace shoal::log {

namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<bool> g_json{false};

spdlog::level::level_enum SpdLevel(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarning:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// One logger on stderr, unbuffered by line (spdlog's sinks flush per line
// when asked), in UTC with milliseconds.
std::mutex g_mu;
std::shared_ptr<spdlog::logger> g_logger;  // guarded by g_mu while replaced

std::shared_ptr<spdlog::logger> MakeLogger(bool json, const std::string& program) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("shoal", std::move(sink));
  logger->set_level(spdlog::level::trace);  // Enabled() filters first
  logger->flush_on(spdlog::level::trace);
  const std::string prefix = program.empty() ? "" : fmt::format("\"program\":\"{}\",", program);
  logger->set_pattern(json
                          ? "{\"time\":\"%Y-%m-%dT%H:%M:%S.%eZ\",\"level\":\"%l\"," + prefix + "%v}"
                          : "%Y-%m-%dT%H:%M:%S.%eZ %l %v",
                      spdlog::pattern_time_type::utc);
  return logger;
}

std::shared_ptr<spdlog::logger> Logger() {
  std::lock_guard lock(g_mu);
  if (!g_logger) g_logger = MakeLogger(false, "");
  return g_logger;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  out += JsonEscaped(s);
  out += '"';
}

// A text value goes bare when it is one plain word, else quoted as JSON
// quotes it (so a value cannot forge another field or a second line).
void AppendTextValue(std::string& out, const Field& f) {
  bool plain = !f.text().empty();
  for (unsigned char c : f.text()) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) plain = false;
  }
  if (plain) {
    out += f.text();
  } else {
    AppendJsonString(out, f.text());
  }
}

}  // namespace

Field::Field(std::string_view key, double v) : key_(key) {
  text_ = std::isfinite(v) ? fmt::format("{:.6g}", v) : "null";
}

Result<Level> ParseLevel(std::string_view text) {
  if (text == "debug") return Level::kDebug;
  if (text == "info") return Level::kInfo;
  if (text == "warning" || text == "warn") return Level::kWarning;
  if (text == "error") return Level::kError;
  return InvalidArgument(
      fmt::format("'{}' is not a log level (debug, info, warning, error)", text));
}

Result<bool> ApplySetting(std::string_view key, std::string_view value, Options& options) {
  if (key == "log_level") {
    Result<Level> level = ParseLevel(value);
    if (!level.ok()) return level.status().WithContext("log_level");
    options.level = *level;
    return true;
  }
  if (key != "log_format") return false;
  if (value != "text" && value != "json") return InvalidArgument("log_format: text or json");
  options.json = value == "json";
  return true;
}

void Configure(const Options& options) {
  g_level = static_cast<int>(options.level);
  g_json = options.json;
  auto logger = MakeLogger(options.json, options.program);
  std::lock_guard lock(g_mu);
  g_logger = std::move(logger);
}

bool Enabled(Level level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

std::string Format(std::string_view event, std::initializer_list<Field> fields, bool json) {
  std::string out;
  if (json) {
    out += "\"event\":";
    AppendJsonString(out, event);
    for (const Field& f : fields) {
      out += ',';
      AppendJsonString(out, f.key());
      out += ':';
      if (f.quoted()) {
        AppendJsonString(out, f.text());
      } else {
        out += f.text();
      }
    }
    return out;
  }
  out += event;
  for (const Field& f : fields) {
    out += ' ';
    out += f.key();
    out += '=';
    AppendTextValue(out, f);
  }
  return out;
}

void Event(Level level, std::string_view event, std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  const std::string line = Format(event, fields, g_json.load(std::memory_order_relaxed));
  Logger()->log(SpdLevel(level), "{}", line);
}

}  // namespace shoal::log
