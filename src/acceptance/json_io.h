// JSON helpers shared by the bench module's readers and writers. This header
// includes nlohmann/json: include it only from .cc files of src/acceptance.
//
// Readers are api::ObjectReader (api/json_reader.h) with
// UnknownFields::kIgnore: fields they do not know are ignored, so results
// written by a newer node binary still load; a known field of the wrong type
// or a missing required one is an error that names it, with its path
// ("results.measurements[3].value is missing").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "acceptance/results.h"
#include "api/json_reader.h"
#include "core/status.h"

namespace shoal::acceptance {

using Json = nlohmann::json;

// An object reader for acceptance files: strict on types and required
// fields, tolerant of fields it does not know.
inline api::ObjectReader JsonReader(const Json& j, std::string path) {
  return api::ObjectReader(j, std::move(path), api::UnknownFields::kIgnore);
}

// Parses text, with a syntax error turned into a Status that says where.
Result<Json> ParseJsonText(std::string_view text, std::string_view what);

Json ToJsonValue(const NodeResults& r);
Result<NodeResults> NodeResultsFromJson(const Json& j, const std::string& path);

}  // namespace shoal::acceptance
