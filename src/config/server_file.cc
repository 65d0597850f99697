#include "config/server_file.h"

#include <optional>
#include <utility>

#include "config/cluster_file.h"
#include "config/toml_reader.h"

namespace shoal::config {

namespace {

// Every key of the table `name` of `top`, if there is one.
Result<Settings> ReadSettings(const TableReader& top, std::string_view name) {
  Settings out;
  SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> table, top.Table(name));
  if (!table) return out;
  for (const std::string& key : table->Keys()) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> value, table->Text(key));
    out[key] = std::move(*value);
  }
  return out;
}

Result<ServerFile> ReadServerFile(const TomlDocument& doc) {
  const TableReader top = doc.Root();
  SHOAL_RETURN_IF_ERROR(top.CheckKeys({"server", "partition", "account", "power_budget", "power"}));
  ServerFile out;
  SHOAL_RETURN_IF_ERROR(ReadPartitionsAndAccounts(top, out.cluster).status());
  SHOAL_RETURN_IF_ERROR(ReadPower(top, out.cluster));
  SHOAL_ASSIGN_OR_RETURN(out.server, ReadSettings(top, "server"));
  return out;
}

Result<Settings> ReadSettingsFile(const TomlDocument& doc, std::string_view table) {
  const TableReader top = doc.Root();
  SHOAL_RETURN_IF_ERROR(top.CheckKeys({table}));
  return ReadSettings(top, table);
}

}  // namespace

Result<ServerFile> ParseServerToml(std::string_view text, std::string_view origin) {
  SHOAL_ASSIGN_OR_RETURN(TomlDocument doc, TomlDocument::Parse(text, origin));
  return ReadServerFile(doc);
}

Result<ServerFile> LoadServerFile(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(TomlDocument doc, TomlDocument::Load(path));
  return ReadServerFile(doc);
}

Result<Settings> ParseSettingsToml(std::string_view text, std::string_view origin,
                                   std::string_view table) {
  SHOAL_ASSIGN_OR_RETURN(TomlDocument doc, TomlDocument::Parse(text, origin));
  return ReadSettingsFile(doc, table);
}

Result<Settings> LoadSettingsFile(const std::string& path, std::string_view table) {
  SHOAL_ASSIGN_OR_RETURN(TomlDocument doc, TomlDocument::Load(path));
  return ReadSettingsFile(doc, table);
}

}  // namespace shoal::config
