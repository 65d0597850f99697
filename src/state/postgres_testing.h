// A PostgreSQL server of a test's own: initdb and pg_ctl in a scratch
// directory, reached on a unix socket there only (no TCP port), stopped
// when the object goes. PostgreSQL refuses to run as root, so as root the
// server runs as `nobody`. Without PostgreSQL's programs (Debian package
// postgresql) `skip_reason()` says so and the test skips.
#pragma once

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "state/store_testing.h"

namespace shoal::state {

class TestPostgres {
 public:
  TestPostgres() {
    bin_ = FindBinDir();
    if (bin_.empty()) {
      skip_ =
          "[program] PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql)";
      return;
    }
    if (::geteuid() == 0) {
      as_ = "setpriv --reuid=nobody --regid=nogroup --clear-groups ";
      ::chmod(dir_.path().c_str(), 0777);
    }
    // fsync off: these tests check what the store writes, not the disk.
    const std::string& d = dir_.path();
    if (!Sh(fmt::format("{}/initdb -D {}/data --no-sync -A trust -E UTF8 -U shoal "
                        "--no-instructions",
                        bin_, d)) ||
        !Sh(fmt::format("{0}/pg_ctl -D {1}/data -l {1}/log -w -t 60 -o \"-k {1} "
                        "-c listen_addresses= -c fsync=off\" start",
                        bin_, d))) {
      skip_ = "[machine] cannot start a PostgreSQL server: " + Log();
      return;
    }
    started_ = true;
  }
  TestPostgres(const TestPostgres&) = delete;
  TestPostgres& operator=(const TestPostgres&) = delete;
  ~TestPostgres() {
    if (started_) Sh(fmt::format("{}/pg_ctl -D {}/data -m immediate -w stop", bin_, dir_.path()));
  }

  // Empty when the server runs.
  const std::string& skip_reason() const { return skip_; }
  // A connection string for a new, empty database of that name.
  std::string NewDatabase(const std::string& name) {
    Sh(fmt::format("{}/createdb -h {} -U shoal {}", bin_, dir_.path(), name));
    return Url(name);
  }
  std::string Url(const std::string& name) const {
    return "host=" + dir_.path() + " user=shoal dbname=" + name;
  }
  // Runs SQL through psql; true when it succeeded.
  bool Psql(const std::string& database, const std::string& sql) {
    std::ofstream(dir_.Sub("q.sql")) << sql;
    return Sh(fmt::format("{}/psql -q -v ON_ERROR_STOP=1 -h {} -U shoal -d {} -f {}", bin_,
                          dir_.path(), database, dir_.Sub("q.sql")));
  }

 private:
  static std::string FindBinDir() {
    for (const char* v : {"17", "16", "15", "14"}) {
      const std::string dir = std::string("/usr/lib/postgresql/") + v + "/bin";
      if (::access((dir + "/pg_ctl").c_str(), X_OK) == 0) return dir;
    }
    return "";
  }
  bool Sh(const std::string& command) const {
    const std::string line = as_ + command + " >> " + dir_.Sub("sh.log") + " 2>&1";
    return std::system(line.c_str()) == 0;
  }
  std::string Log() const {
    std::ifstream in(dir_.Sub("sh.log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  ScratchDir dir_;
  std::string bin_;
  std::string as_;
  std::string skip_;
  bool started_ = false;
};

}  // namespace shoal::state
