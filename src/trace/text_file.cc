#include "trace/text_file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/strings.h"

namespace shoal::trace {

Result<TextFile> TextFile::Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot open the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Internal(fmt::format("{}: read failed", path));
  return TextFile(path, std::move(text).str());
}

TextFile TextFile::FromString(std::string path, std::string text) {
  return TextFile(std::move(path), std::move(text));
}

std::string_view TextFile::FirstLine() const {
  LineCursor cursor(*this);
  return cursor.Next() ? cursor.line() : std::string_view();
}

Status TextFile::Error(int line, std::string_view message) const {
  return InvalidArgument(fmt::format("{}:{}: {}", path_, line, message));
}

bool LineCursor::Next() {
  const std::string& text = file_.text();
  while (pos_ < text.size()) {
    size_t end = text.find('\n', pos_);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos_, end - pos_);
    pos_ = end + 1;
    ++line_number_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    line_ = line;
    return true;
  }
  return false;
}

std::vector<std::string_view> LineCursor::Fields(char sep) const {
  std::vector<std::string_view> fields = Split(line_, sep);
  for (std::string_view& f : fields)
    f = Trim(f);
  return fields;
}

std::string FileStem(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot != std::string_view::npos && dot > 0) base = base.substr(0, dot);
  return std::string(base);
}

std::string FileExtension(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  return ToLower(base.substr(dot + 1));
}

}  // namespace shoal::trace
