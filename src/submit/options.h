// Internal to shoal_submit: the table of options, and the reading of a list of
// words (a command line, or one #SBATCH / #SHOAL line) into a Request.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "submit/request.h"

namespace shoal::submit {

// Where the words come from; a few options mean something in one place only.
enum class Source : uint8_t { kCommandLine, kDirective };

// Reads options from `words` into `request`. On the command line the first
// word that is not an option, or every word after "--", starts the command
// and goes to `rest` with all that follows; in a directive such a word is an
// error. An option given twice keeps its last value; two different options
// for one thing (--gres and --gpus, --mem and --mem-per-gpu, -c and
// --cpus-per-gpu) in one source are an error.
Status ReadOptions(const std::vector<std::string>& words, Source source, Request& request,
                   std::vector<std::string>& rest, std::vector<std::string>& notes);

// Reads one option: `name` as the user spelled it ("--nodes", "-N"), and its
// value when the option takes one.
Status ReadOption(std::string_view name, std::optional<std::string_view> value, Source source,
                  Request& request, std::vector<std::string>& notes);

}  // namespace shoal::submit
