// Structured logs of the long-running programs (`shoal server`, `shoal
// agent`): one line per event on stderr (journald keeps it), as text or as
// JSON, each an event name and key=value fields (docs/logs.md):
//
//   2026-12-03T18:30:36.123Z info job.state job=12 from=pending to=running nodes=gpu01
//   {"time":"2026-12-03T18:30:36.123Z","level":"info","program":"server","event":"job.state",...}
//
// Written through spdlog (its header stays in log.cc). Fields carry what
// the caller gives them: never pass a token, a key or a job's environment.
// Thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shoal::log {

enum class Level { kDebug, kInfo, kWarning, kError };

// "debug", "info", "warning" (or "warn"), "error".
Result<Level> ParseLevel(std::string_view text);

struct Options {
  Level level = Level::kInfo;
  bool json = false;
  std::string program{};  // "server", "agent": a field of every JSON line
};

// Applies `log_level` ("debug", ...) or `log_format` ("text", "json") from a
// configuration file or a flag: false for any other key, an error for a bad
// value.
Result<bool> ApplySetting(std::string_view key, std::string_view value, Options& options);

// Until called: info and up, as text.
void Configure(const Options& options);
bool Enabled(Level level);

// One field: a key and its value, text or a number.
class Field {
 public:
  Field(std::string_view key, std::string_view text) : key_(key), text_(text), quoted_(true) {}
  Field(std::string_view key, const std::string& text) : Field(key, std::string_view(text)) {}
  Field(std::string_view key, const char* text) : Field(key, std::string_view(text)) {}
  Field(std::string_view key, int64_t v) : key_(key), text_(std::to_string(v)) {}
  Field(std::string_view key, uint64_t v) : key_(key), text_(std::to_string(v)) {}
  Field(std::string_view key, int v) : Field(key, static_cast<int64_t>(v)) {}
  Field(std::string_view key, double v);
  Field(std::string_view key, bool v) : key_(key), text_(v ? "true" : "false") {}

  std::string_view key() const { return key_; }
  std::string_view text() const { return text_; }
  bool quoted() const { return quoted_; }  // a string in JSON, not a number or a boolean

 private:
  std::string_view key_;
  std::string text_;
  bool quoted_ = false;
};

// Writes the event when its level is enabled.
void Event(Level level, std::string_view event, std::initializer_list<Field> fields = {});

inline void Info(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kInfo, event, fields);
}
inline void Warning(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kWarning, event, fields);
}
inline void Error(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kError, event, fields);
}

// The line an event makes (without the time and level), for tests.
std::string Format(std::string_view event, std::initializer_list<Field> fields, bool json);

}  // namespace shoal::log
