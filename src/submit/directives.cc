#include "submit/directives.h"

#include <fmt/format.h>

#include "core/strings.h"
#include "submit/options.h"

namespace shoal::submit {

namespace {

enum class Kind : uint8_t { kNone, kSbatch, kShoal };

constexpr std::string_view kSbatch = "#SBATCH";
constexpr std::string_view kShoal = "#SHOAL";

bool IsBlank(char ch) {
  return ch == ' ' || ch == '\t';
}

// A directive is the magic word in the first column, then a blank or the end
// of the line; "#SBATCHX" is a comment, as it is to sbatch.
bool HasMagic(std::string_view line, std::string_view magic) {
  return StartsWith(line, magic) && (line.size() == magic.size() || IsBlank(line[magic.size()]));
}

Kind DirectiveKind(std::string_view line) {
  if (HasMagic(line, kSbatch)) return Kind::kSbatch;
  if (HasMagic(line, kShoal)) return Kind::kShoal;
  return Kind::kNone;
}

// A comment that a reader could take for a directive: indented, or in
// another case, or with no blank after the magic word.
bool LooksLikeDirective(std::string_view trimmed) {
  const std::string lower = ToLower(trimmed.substr(0, kSbatch.size()));
  return StartsWith(lower, "#sbatch") || StartsWith(lower, "#shoal");
}

}  // namespace

Result<std::vector<std::string>> SplitWords(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // also true for a quoted empty word ("")
  size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    if (IsBlank(ch)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
      continue;
    }
    if (ch == '#' && !in_word) break;
    in_word = true;
    if (ch == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return InvalidArgument("a ' quote is not closed");
      word.append(text.substr(i + 1, close - i - 1));
      i = close + 1;
    } else if (ch == '"') {
      ++i;
      while (true) {
        if (i >= text.size()) return InvalidArgument("a \" quote is not closed");
        const char q = text[i];
        if (q == '"') break;
        // Within double quotes a backslash escapes only what the shell lets it.
        if (q == '\\' && i + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[i + 1]) != std::string_view::npos) {
          word += text[i + 1];
          i += 2;
          continue;
        }
        word += q;
        ++i;
      }
      ++i;
    } else if (ch == '\\') {
      if (i + 1 < text.size()) word += text[i + 1];
      i += 2;
    } else {
      word += ch;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

Result<ScriptOptions> ReadDirectives(std::string_view script_text, std::string_view script_path,
                                     std::vector<std::string>& notes) {
  const std::string where = script_path.empty() ? "script" : std::string(script_path);
  if (script_text.size() > kMaxScriptBytes) {
    return Status(
        StatusCode::kResourceExhausted,
        fmt::format("{}: the script is larger than {} MiB", where, kMaxScriptBytes >> 20));
  }
  Request sbatch;
  Request shoal;
  ScriptOptions out;
  // One note of each kind is enough to point the user at the problem.
  bool noted_late = false;
  bool noted_lookalike = false;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < script_text.size()) {
    const size_t end = std::min(script_text.find('\n', pos), script_text.size());
    const std::string_view line = script_text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string at = fmt::format("{}:{}", where, line_no);
    if (line.find('\0') != std::string_view::npos) {
      return InvalidArgument("the script holds a NUL byte; is it a binary file?").WithContext(at);
    }
    if (!line.empty() && line.back() == '\r') {
      return InvalidArgument("the script has DOS line breaks (\\r\\n); convert it with dos2unix")
          .WithContext(at);
    }
    const Kind kind = DirectiveKind(line);
    if (out.has_command) {
      if (kind != Kind::kNone && !noted_late) {
        notes.push_back(fmt::format(
            "{}: directives after the first command are ignored, as sbatch ignores them", at));
        noted_late = true;
      }
      continue;
    }
    if (kind != Kind::kNone) {
      const size_t magic = kind == Kind::kSbatch ? kSbatch.size() : kShoal.size();
      auto words = SplitWords(line.substr(magic));
      if (!words.ok()) return words.status().WithContext(at);
      std::vector<std::string> rest;
      Status read = ReadOptions(*words, Source::kDirective, kind == Kind::kSbatch ? sbatch : shoal,
                                rest, notes);
      if (!read.ok()) return read.WithContext(at);
      continue;
    }
    const std::string_view trimmed = Trim(line);
    if (trimmed.empty()) continue;
    if (trimmed[0] == '#') {
      if (LooksLikeDirective(trimmed) && !StartsWith(line, "#!") && !noted_lookalike) {
        notes.push_back(
            fmt::format("{}: this line is a comment, not a directive: a directive starts with "
                        "#SBATCH or #SHOAL in the "
                        "first column, then a blank",
                        at));
        noted_lookalike = true;
      }
      continue;
    }
    out.has_command = true;
  }
  Overlay(shoal, sbatch);
  out.request = std::move(sbatch);
  return out;
}

}  // namespace shoal::submit
