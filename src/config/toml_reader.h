// The one strict reader of Shoal's TOML files (cluster files, the server's and
// the agent's configuration, `shoal plan` workloads).
//
// Strict because a typo must not silently drop a setting: a table is read by
// naming the keys it may have (`CheckKeys`), and any other key is an error
// that suggests the nearest name. Every error points at the file and line:
//
//   cluster.toml:3: nodes[1]: unknown key 'gpu_modle' (did you mean 'gpu_model'?)
//   cluster.toml:4: nodes[1].count: must be an integer
//   server.toml:7: partition[1].max_time: '7 days' is not a duration
//
// toml++ stays inside toml_reader.cc: its exceptions never leave this module,
// and the many files that read settings do not compile its headers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace shoal::config {

class TableReader;

// A parsed TOML file. It owns the tree that its TableReaders point into, so it
// must outlive them. Immutable once parsed; not copyable.
class TomlDocument {
 public:
  // Parses `text`; `origin` (usually the path) names it in errors. A syntax
  // error reads "origin:line:column: what is wrong".
  static Result<TomlDocument> Parse(std::string_view text, std::string_view origin);
  // Reads and parses the file at `path` (NotFound when it cannot be read).
  static Result<TomlDocument> Load(const std::string& path);

  TomlDocument(TomlDocument&&) noexcept;
  TomlDocument& operator=(TomlDocument&&) noexcept;
  ~TomlDocument();

  const std::string& origin() const;
  // The top-level table; its errors carry no table name.
  TableReader Root() const;

 private:
  struct Impl;
  explicit TomlDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One table of a document and its name in errors ("nodes[2]", "constraints").
// Each getter returns an empty optional when the key is absent, the value when
// it has the expected type, and otherwise an error naming the key and line.
// Cheap to copy; valid while its TomlDocument lives.
class TableReader {
 public:
  const std::string& name() const { return name_; }
  bool Has(std::string_view key) const;
  // The keys of the table, in file order.
  std::vector<std::string> Keys() const;

  // "origin:line: name.key: message", at the key's line (the table's line when
  // `key` is empty or absent).
  Status Error(std::string_view key, std::string_view message) const;

  // Fails on the first key (in file order) that is not in `allowed`:
  // "origin:line: name: unknown key 'x' (did you mean 'y'?)", or "(known: ...)"
  // when no allowed key is near.
  Status CheckKeys(const std::vector<std::string_view>& allowed) const;

  Result<std::optional<std::string>> String(std::string_view key) const;
  // An integer within [lo, hi].
  Result<std::optional<int64_t>> Int(std::string_view key, int64_t lo, int64_t hi) const;
  // A float or an integer.
  Result<std::optional<double>> Number(std::string_view key) const;
  Result<std::optional<bool>> Bool(std::string_view key) const;
  // A list of strings; `what` says what they are in the error ("GPU models").
  Result<std::optional<std::vector<std::string>>> StringList(
      std::string_view key, std::string_view what = "strings, e.g. [\"a\", \"b\"]") const;
  // A memory size: "512G", "80GiB", or an integer number of MiB.
  Result<std::optional<int64_t>> MemoryMib(std::string_view key) const;
  // A time limit in Slurm's forms ("7-00:00:00") or a duration ("4h", "30s");
  // an integer is minutes, as in Slurm.
  Result<std::optional<Duration>> TimeLimit(std::string_view key) const;
  // A number, or a string that `parse` reads as one ("15T", "4M").
  Result<std::optional<double>> NumberOrText(std::string_view key,
                                             Result<double> (*parse)(std::string_view)) const;
  // A string read by `parse` (a precision, say); its error is reported at the key.
  template <typename T>
  Result<std::optional<T>> Parsed(std::string_view key,
                                  Result<T> (*parse)(std::string_view)) const {
    SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> text, String(key));
    if (!text) return std::optional<T>();
    Result<T> value = parse(*text);
    if (!value.ok()) return Error(key, value.status().message());
    return std::optional<T>(std::move(value).value());
  }
  // A value of a table of settings, as text: strings as they are, numbers and
  // booleans ("true", "false") written out, lists of strings joined with commas.
  Result<std::optional<std::string>> Text(std::string_view key) const;

  // A sub-table written [key] (named "name.key" in errors).
  Result<std::optional<TableReader>> Table(std::string_view key) const;
  // The tables of an array written [[key]], named "key[1]", "key[2]", ...;
  // empty when the key is absent.
  Result<std::vector<TableReader>> Tables(std::string_view key) const;

 private:
  friend class TomlDocument;
  // `table` is a toml::table of the document; void keeps toml++ out of this header.
  TableReader(std::string_view origin, const void* table, std::string name)
      : origin_(origin), table_(table), name_(std::move(name)) {}
  std::string Qualified(std::string_view key) const;

  std::string_view origin_;
  const void* table_;
  std::string name_;
};

}  // namespace shoal::config
