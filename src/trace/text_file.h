// Line-by-line access to the small delimited text files the traces come in.
//
// Not a CSV library: the public traces have no quoting, so a line is split on
// one separator character. What it adds is what every reader here needs:
// line numbers for errors, CRLF endings, blank lines skipped, and errors worded
// "path:line: what is wrong".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::trace {

// A whole file held in memory; the views a LineCursor hands out point into it.
// Not copyable, so those views cannot dangle by accident.
class TextFile {
 public:
  static Result<TextFile> Read(const std::string& path);
  static TextFile FromString(std::string path, std::string text);

  TextFile(TextFile&&) = default;
  TextFile& operator=(TextFile&&) = default;
  TextFile(const TextFile&) = delete;
  TextFile& operator=(const TextFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  // The first non-blank line without its line ending; empty for an empty file.
  std::string_view FirstLine() const;

  // "path:line: message" as an InvalidArgument status.
  Status Error(int line, std::string_view message) const;

 private:
  TextFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {}

  std::string path_;
  std::string text_;
};

// Walks the non-blank lines of a TextFile. Single-threaded, like the file.
class LineCursor {
 public:
  explicit LineCursor(const TextFile& file) : file_(file) {}

  // Moves to the next non-blank line; false at the end of the file.
  bool Next();
  int line_number() const { return line_number_; }
  std::string_view line() const { return line_; }
  // The current line split on `sep`, each field trimmed of spaces.
  std::vector<std::string_view> Fields(char sep) const;

  Status Error(std::string_view message) const { return file_.Error(line_number_, message); }

 private:
  const TextFile& file_;
  size_t pos_ = 0;
  int line_number_ = 0;
  std::string_view line_;
};

// The file name without directories and the last extension ("cluster01").
std::string FileStem(std::string_view path);
// The extension in lower case without the dot ("csv"), or empty.
std::string FileExtension(std::string_view path);

}  // namespace shoal::trace
