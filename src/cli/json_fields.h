// Reading the server's JSON answers in the CLI: a field as text or as a
// number, whatever its type, with a fallback for one that is absent. For
// the commands' .cc files only (it includes the JSON library).
#pragma once

#include <string>

#include "api/json.h"

namespace shoal::cli {

inline std::string Str(const api::Json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

inline double Num(const api::Json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace shoal::cli
