#include "api/json_reader.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace shoal::api {

namespace {
thread_local bool tolerate_unknown_fields = false;
}  // namespace

TolerateUnknownFields::TolerateUnknownFields(bool tolerate) : previous_(tolerate_unknown_fields) {
  tolerate_unknown_fields = previous_ || tolerate;
}
TolerateUnknownFields::~TolerateUnknownFields() {
  tolerate_unknown_fields = previous_;
}

ObjectReader::ObjectReader(const Json& j, std::string path, UnknownFields unknown_fields)
    : j_(j),
      path_(std::move(path)),
      unknown_fields_(tolerate_unknown_fields ? UnknownFields::kIgnore : unknown_fields) {
  if (!j.is_object()) Fail(path_ + " must be a JSON object");
}

std::string ObjectReader::PathOf(std::string_view key) const {
  return fmt::format("{}.{}", path_, key);
}

void ObjectReader::Fail(std::string message) {
  if (status_.ok()) status_ = InvalidArgument(std::move(message));
}

void ObjectReader::Fail(const Status& s) {
  if (status_.ok()) status_ = s;
}

bool ObjectReader::Has(const char* key) {
  known_.insert(key);
  if (!j_.is_object()) return false;
  auto it = j_.find(key);
  return it != j_.end() && !it->is_null();
}

const Json* ObjectReader::Find(const char* key, bool required) {
  known_.insert(key);
  if (!status_.ok()) return nullptr;
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) {
    if (required) {
      Fail(PathOf(key) + " is missing");
      first_error_is_missing_ = true;
    }
    return nullptr;
  }
  return &*it;
}

Status ObjectReader::Finish() const {
  if (unknown_fields_ == UnknownFields::kIgnore) return status_;
  // After a missing field the unknown one is looked for too: it is most
  // likely the same field misspelt, and the error names both.
  if (!status_.ok() && !first_error_is_missing_) return status_;
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (known_.count(it.key())) continue;
    const std::string unknown = fmt::format("{}: unknown field '{}'", path_, it.key());
    return InvalidArgument(status_.ok() ? unknown
                                        : fmt::format("{} ({})", unknown, status_.message()));
  }
  return status_;
}

void ObjectReader::WrongType(const char* key, const char* want) {
  Fail(fmt::format("{} must be {}", PathOf(key), want));
}

void ObjectReader::Convert(const Json& v, const char* key, std::string* out) {
  if (!v.is_string()) return WrongType(key, "a string");
  *out = v.get<std::string>();
}

void ObjectReader::Convert(const Json& v, const char* key, bool* out) {
  if (!v.is_boolean()) return WrongType(key, "true or false");
  *out = v.get<bool>();
}

void ObjectReader::Convert(const Json& v, const char* key, int* out) {
  int64_t x = 0;
  Convert(v, key, &x);
  if (!status_.ok()) return;
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    return WrongType(key, "a 32-bit integer");
  *out = static_cast<int>(x);
}

void ObjectReader::Convert(const Json& v, const char* key, int64_t* out) {
  if (!v.is_number_integer()) return WrongType(key, "an integer");
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return WrongType(key, "a 64-bit integer");
  *out = v.get<int64_t>();
}

void ObjectReader::Convert(const Json& v, const char* key, uint64_t* out) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return WrongType(key, "a non-negative integer");
  *out = v.get<uint64_t>();
}

void ObjectReader::Convert(const Json& v, const char* key, double* out) {
  if (!v.is_number()) return WrongType(key, "a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) return WrongType(key, "a finite number");
  *out = x;
}

void ObjectReader::Convert(const Json& v, const char* key, std::vector<double>* out) {
  if (!v.is_array()) return WrongType(key, "a list of numbers");
  out->clear();
  for (const Json& e : v) {
    if (!e.is_number() || !std::isfinite(e.get<double>()))
      return WrongType(key, "a list of numbers");
    out->push_back(e.get<double>());
  }
}

void ObjectReader::Convert(const Json& v, const char* key, std::vector<std::string>* out) {
  if (!v.is_array()) return WrongType(key, "a list of strings");
  out->clear();
  for (const Json& e : v) {
    if (!e.is_string()) return WrongType(key, "a list of strings");
    out->push_back(e.get<std::string>());
  }
}

void ObjectReader::Convert(const Json& v, const char* key, std::map<std::string, double>* out) {
  if (!v.is_object()) return WrongType(key, "an object of numbers");
  out->clear();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      return WrongType(key, "an object of numbers");
    (*out)[it.key()] = it->get<double>();
  }
}

void ObjectReader::Convert(const Json& v, const char* key,
                           std::map<std::string, std::string>* out) {
  if (!v.is_object()) return WrongType(key, "an object of strings");
  out->clear();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it->is_string()) return WrongType(key, "an object of strings");
    (*out)[it.key()] = it->get<std::string>();
  }
}

void ObjectReader::Convert(const Json& v, const char*, Json* out) {
  *out = v;
}

}  // namespace shoal::api
