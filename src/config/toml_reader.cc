#include "config/toml_reader.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <tuple>

#include "core/strings.h"

namespace shoal::config {

namespace {

const toml::table& AsTable(const void* table) {
  return *static_cast<const toml::table*>(table);
}

int64_t LineOf(const toml::node& n) {
  return n.source().begin.line;
}

}  // namespace

// ---------------------------------------------------------------------------
// TomlDocument

struct TomlDocument::Impl {
  std::string origin;
  toml::table root;
};

TomlDocument::TomlDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TomlDocument::TomlDocument(TomlDocument&&) noexcept = default;
TomlDocument& TomlDocument::operator=(TomlDocument&&) noexcept = default;
TomlDocument::~TomlDocument() = default;

Result<TomlDocument> TomlDocument::Parse(std::string_view text, std::string_view origin) {
  auto impl = std::make_unique<Impl>();
  impl->origin = std::string(origin);
  try {
    impl->root = toml::parse(text, impl->origin);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                       e.source().begin.column, e.description()));
  }
  return TomlDocument(std::move(impl));
}

Result<TomlDocument> TomlDocument::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return NotFound(fmt::format("cannot read {}", path));
  return Parse(text.str(), path);
}

const std::string& TomlDocument::origin() const {
  return impl_->origin;
}

TableReader TomlDocument::Root() const {
  return TableReader(impl_->origin, &impl_->root, "");
}

// ---------------------------------------------------------------------------
// TableReader

bool TableReader::Has(std::string_view key) const {
  return AsTable(table_).contains(key);
}

std::vector<std::string> TableReader::Keys() const {
  // toml++ keeps keys sorted; errors and settings read better in file order.
  std::vector<std::tuple<int64_t, int64_t, std::string>> found;
  for (auto&& [key, value] : AsTable(table_)) {
    found.emplace_back(key.source().begin.line, key.source().begin.column, std::string(key.str()));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& [line, column, key] : found)
    out.push_back(std::move(key));
  return out;
}

std::string TableReader::Qualified(std::string_view key) const {
  if (name_.empty()) return std::string(key);
  if (key.empty()) return name_;
  return fmt::format("{}.{}", name_, key);
}

Status TableReader::Error(std::string_view key, std::string_view message) const {
  const toml::table& table = AsTable(table_);
  const toml::node* at = key.empty() ? nullptr : table.get(key);
  int64_t line = LineOf(at != nullptr ? *at : table);
  std::string name = Qualified(key);
  if (name.empty()) return InvalidArgument(fmt::format("{}:{}: {}", origin_, line, message));
  return InvalidArgument(fmt::format("{}:{}: {}: {}", origin_, line, name, message));
}

Status TableReader::CheckKeys(const std::vector<std::string_view>& allowed) const {
  for (const std::string& k : Keys()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    const std::string hint = UnknownNameHint(k, allowed);
    std::string where = name_.empty() ? "" : name_ + ": ";
    return InvalidArgument(fmt::format("{}:{}: {}unknown key '{}'{}", origin_,
                                       LineOf(*AsTable(table_).get(k)), where, k, hint));
  }
  return Status::Ok();
}

Result<std::optional<std::string>> TableReader::String(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<std::string>();
  if (!n->is_string()) return Error(key, "must be a string");
  return std::optional<std::string>(n->as_string()->get());
}

Result<std::optional<int64_t>> TableReader::Int(std::string_view key, int64_t lo,
                                                int64_t hi) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<int64_t>();
  if (!n->is_integer()) return Error(key, "must be an integer");
  int64_t v = n->as_integer()->get();
  if (v < lo || v > hi) return Error(key, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
  return std::optional<int64_t>(v);
}

Result<std::optional<double>> TableReader::Number(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<double>();
  if (n->is_integer()) return std::optional<double>(static_cast<double>(n->as_integer()->get()));
  if (!n->is_floating_point()) return Error(key, "must be a number");
  return std::optional<double>(n->as_floating_point()->get());
}

Result<std::optional<bool>> TableReader::Bool(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<bool>();
  if (!n->is_boolean()) return Error(key, "must be true or false");
  return std::optional<bool>(n->as_boolean()->get());
}

Result<std::optional<std::vector<std::string>>> TableReader::StringList(
    std::string_view key, std::string_view what) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<std::vector<std::string>>();
  const toml::array* array = n->as_array();
  const std::string message = fmt::format("must be a list of {}", what);
  if (array == nullptr) return Error(key, message);
  std::vector<std::string> out;
  for (const toml::node& element : *array) {
    if (!element.is_string()) return Error(key, message);
    out.push_back(element.as_string()->get());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::optional<int64_t>> TableReader::MemoryMib(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<int64_t>();
  if (n->is_integer()) {
    int64_t v = n->as_integer()->get();
    if (v < 0) return Error(key, "must not be negative");
    return std::optional<int64_t>(v);
  }
  if (!n->is_string()) return Error(key, "must be a size such as \"512G\" or an integer of MiB");
  auto mib = ParseMemoryMib(n->as_string()->get());
  if (!mib.ok()) return Error(key, mib.status().message());
  return std::optional<int64_t>(*mib);
}

Result<std::optional<Duration>> TableReader::TimeLimit(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<Duration>();
  if (n->is_integer()) {
    int64_t minutes = n->as_integer()->get();
    if (minutes < 0) return Error(key, "must not be negative");
    return std::optional<Duration>(std::chrono::minutes(minutes));
  }
  if (!n->is_string()) return Error(key, "must be a time such as \"1-00:00:00\" or \"4h\"");
  auto d = ParseDuration(n->as_string()->get());
  if (!d.ok()) return Error(key, d.status().message());
  return std::optional<Duration>(*d);
}

Result<std::optional<double>> TableReader::NumberOrText(
    std::string_view key, Result<double> (*parse)(std::string_view)) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<double>();
  if (n->is_string()) return Parsed(key, parse);
  if (n->is_integer() || n->is_floating_point()) return Number(key);
  return Error(key, "must be a number or a string such as \"15T\"");
}

Result<std::optional<std::string>> TableReader::Text(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<std::string>();
  // Tested by kind, not with node::value<T>(), which would turn booleans into 1 and 0.
  if (n->is_string()) return std::optional<std::string>(n->as_string()->get());
  if (n->is_integer()) return std::optional<std::string>(std::to_string(n->as_integer()->get()));
  if (n->is_floating_point())
    return std::optional<std::string>(fmt::format("{}", n->as_floating_point()->get()));
  if (n->is_boolean()) return std::optional<std::string>(n->as_boolean()->get() ? "true" : "false");
  if (n->is_array()) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> items, StringList(key));
    return std::optional<std::string>(Join(*items, ","));
  }
  return Error(key, "must be a string, number, boolean or list of strings");
}

Result<std::optional<TableReader>> TableReader::Table(std::string_view key) const {
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return std::optional<TableReader>();
  if (!n->is_table())
    return Error(key, fmt::format("must be a table, written [{}]", Qualified(key)));
  return std::optional<TableReader>(TableReader(origin_, n->as_table(), Qualified(key)));
}

Result<std::vector<TableReader>> TableReader::Tables(std::string_view key) const {
  std::vector<TableReader> out;
  const toml::node* n = AsTable(table_).get(key);
  if (n == nullptr) return out;
  if (n->is_table())
    return Error(key, fmt::format("write [[{}]] (a list of tables), not [{}]", key, key));
  const toml::array* array = n->as_array();
  if (array == nullptr)
    return Error(key, fmt::format("must be a list of tables, written [[{}]]", key));
  for (const toml::node& element : *array) {
    if (!element.is_table())
      return Error(key, fmt::format("must be a list of tables, written [[{}]]", key));
    out.push_back(TableReader(origin_, element.as_table(),
                              fmt::format("{}[{}]", Qualified(key), out.size() + 1)));
  }
  return out;
}

}  // namespace shoal::config
