// JSON helpers shared by the bench module's readers and writers. This header
// includes nlohmann/json: include it only from .cc files of src/acceptance.
//
// Readers ignore fields they do not know, so results written by a newer node
// binary still load; a known field of the wrong type or a missing required
// one is an error that names it, with its path ("measurements[3].value").
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "acceptance/results.h"
#include "core/status.h"

namespace shoal::acceptance {

using Json = nlohmann::json;

// Reads the fields of one JSON object, keeping the first error.
class JsonObjectReader {
 public:
  JsonObjectReader(const Json& j, std::string path);

  template <typename T>
  void Required(const char* key, T* out) {
    Read(key, out, true);
  }
  template <typename T>
  void Optional(const char* key, T* out) {
    Read(key, out, false);
  }
  std::string PathOf(const char* key) const { return path_ + "." + key; }

  void Fail(std::string message);
  const Status& status() const { return status_; }

 private:
  template <typename T>
  void Read(const char* key, T* out, bool required) {
    if (!status_.ok()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) Fail(PathOf(key) + " is missing");
      return;
    }
    Convert(*it, key, out);
  }
  void Convert(const Json& v, const char* key, std::string* out);
  void Convert(const Json& v, const char* key, bool* out);
  void Convert(const Json& v, const char* key, int* out);
  void Convert(const Json& v, const char* key, int64_t* out);
  void Convert(const Json& v, const char* key, uint64_t* out);
  void Convert(const Json& v, const char* key, double* out);
  void Convert(const Json& v, const char* key, std::vector<double>* out);
  void Convert(const Json& v, const char* key, std::vector<std::string>* out);
  void Convert(const Json& v, const char* key, std::map<std::string, double>* out);
  void Convert(const Json& v, const char* key, std::map<std::string, std::string>* out);
  void WrongType(const char* key, const char* want);

  const Json& j_;
  std::string path_;
  Status status_;
};

// Reads the list at j[key] with `from_json(item, path)` for each item; an
// absent list is empty unless `required`.
template <typename T, typename Fn>
Status ReadJsonList(const Json& j, const char* key, const std::string& path, bool required,
                    Fn from_json, std::vector<T>* out) {
  out->clear();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? InvalidArgument(path + "." + key + " is missing") : Status::Ok();
  }
  if (!it->is_array()) return InvalidArgument(path + "." + key + " must be a list");
  for (size_t i = 0; i < it->size(); ++i) {
    auto item = from_json((*it)[i], path + "." + key + "[" + std::to_string(i) + "]");
    if (!item.ok()) return item.status();
    out->push_back(std::move(item).value());
  }
  return Status::Ok();
}

// Parses text, with a syntax error turned into a Status that says where.
Result<Json> ParseJsonText(std::string_view text, std::string_view what);

Json ToJsonValue(const NodeResults& r);
Result<NodeResults> NodeResultsFromJson(const Json& j, const std::string& path);

}  // namespace shoal::acceptance
