// The one reader of JSON objects for everything Shoal parses: API bodies,
// store records, the node protocol, acceptance files. A field of the wrong
// type, a missing required field and (unless the caller chooses to ignore
// them) a field nobody asked for are errors that name the field with its
// path ("heartbeat.gpus[2].util must be a number").
//
// This header includes nlohmann/json: include it only from .cc files that
// read JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/shared.h"
#include "core/status.h"

namespace shoal::api {

using Json = nlohmann::json;

// What Finish does with fields that no Optional, Required, Has or List read.
enum class UnknownFields {
  kReject,  // an error naming the first one: a typo never passes silently
  kIgnore,  // files that newer binaries write (with more fields) still load
};

// Within its scope, on this thread, readers made with kReject ignore unknown
// fields instead: for a message from a peer of a newer protocol version,
// whose new fields are optional by rule (node_protocol.h). Nests.
class TolerateUnknownFields {
 public:
  explicit TolerateUnknownFields(bool tolerate);
  ~TolerateUnknownFields();
  TolerateUnknownFields(const TolerateUnknownFields&) = delete;
  TolerateUnknownFields& operator=(const TolerateUnknownFields&) = delete;

 private:
  bool previous_;
};

// Reads the fields of one JSON object, keeping the first error. Reading a
// field marks it known. A null field counts as absent. Not thread-safe; it
// refers to `j`, which must outlive it.
class ObjectReader {
 public:
  // `path` names the object in errors: "job", "results.measurements[3]".
  ObjectReader(const Json& j, std::string path,
               UnknownFields unknown_fields = UnknownFields::kReject);

  // Reads j[key] into *out; when absent, *out keeps its value.
  template <typename T>
  void Optional(const char* key, T* out) {
    Read(key, out, false);
  }
  // The same; absent is an error ("<path>.<key> is missing").
  template <typename T>
  void Required(const char* key, T* out) {
    Read(key, out, true);
  }
  // Whether j[key] is there (not null); marks it known.
  bool Has(const char* key);

  // Reads the list at j[key] with `from_json(item, item_path)` (returning a
  // Result<T>) for each item; absent is an empty list unless `required`.
  // More than `max_items` items is an error.
  template <typename T, typename Fn>
  void List(const char* key, bool required, Fn from_json, std::vector<T>* out,
            size_t max_items = SIZE_MAX) {
    const Json* list = Find(key, required);
    if (list == nullptr) return;
    if (!list->is_array()) return Fail(PathOf(key) + " must be a list");
    if (list->size() > max_items) {
      return Fail(PathOf(key) + " has " + std::to_string(list->size()) + " entries; at most " +
                  std::to_string(max_items));
    }
    out->clear();
    for (size_t i = 0; i < list->size(); ++i) {
      auto item = from_json((*list)[i], PathOf(key) + "[" + std::to_string(i) + "]");
      if (!item.ok()) return Fail(item.status());
      out->push_back(std::move(item).value());
    }
  }

  // "<path>.<key>", for errors about a field and the paths of nested objects.
  std::string PathOf(std::string_view key) const;
  const std::string& path() const { return path_; }

  // Records an error unless one is recorded already. `message` is the whole
  // message: name the field in it (PathOf).
  void Fail(std::string message);
  void Fail(const Status& s);

  // The first error so far; fields nobody read are not looked at.
  const Status& status() const { return status_; }
  // status(), else (with UnknownFields::kReject) "<path>: unknown field 'x'"
  // for the first field that was not read. When the first error is a
  // missing field, an unknown one (likely the same field misspelt) is named
  // first: "job: unknown field 'epoc' (job.epoch is missing)".
  Status Finish() const;

 private:
  // j[key] when there and not null, else null (an error when `required`).
  const Json* Find(const char* key, bool required);

  template <typename T>
  void Read(const char* key, T* out, bool required) {
    const Json* v = Find(key, required);
    if (v != nullptr) Convert(*v, key, out);
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
  void Convert(const Json& v, const char* key, Json* out);  // any JSON, read by the caller
  template <typename T>
  void Convert(const Json& v, const char* key, Shared<T>* out) {
    T value;
    Convert(v, key, &value);
    *out = std::move(value);
  }
  void WrongType(const char* key, const char* want);

  const Json& j_;
  std::string path_;
  UnknownFields unknown_fields_;
  std::set<std::string, std::less<>> known_;
  Status status_;
  bool first_error_is_missing_ = false;
};

}  // namespace shoal::api
