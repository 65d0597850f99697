// Internal to shoal_submit: reading the #SBATCH and #SHOAL lines of a batch
// script.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "submit/request.h"

namespace shoal::submit {

// Splits a directive's text into words as a shell would, without expanding
// anything: blanks separate words, '...' quotes literally, "..." quotes with
// \" \\ \$ \` as escapes, a backslash outside quotes escapes the next
// character, and a # that starts a word starts a comment.
Result<std::vector<std::string>> SplitWords(std::string_view text);

struct ScriptOptions {
  Request request;
  bool has_command = false;  // a line that is neither blank nor a comment
};

// Reads the directives of `script_text`, as sbatch does: lines that start with
// #SBATCH or #SHOAL (in the first column) before the first line that is
// neither blank nor a comment. #SHOAL lines override #SBATCH lines; within
// one kind, later lines override earlier ones. A script over kMaxScriptBytes,
// with a NUL byte or with DOS line breaks is an error (sbatch refuses the
// last too: the shell would read each \r as part of a command). Errors name
// path:line.
Result<ScriptOptions> ReadDirectives(std::string_view script_text, std::string_view script_path,
                                     std::vector<std::string>& notes);

}  // namespace shoal::submit
