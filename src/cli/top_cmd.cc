// shoal top: every GPU of the cluster, live, like nvtop across nodes.
//
// One row per GPU, grouped by node: a utilisation bar, memory, power,
// temperature and the job and user holding it, under a header of cluster
// totals. Plain ANSI (no curses), 80 columns, so it works over any SSH
// session. Interactive keys: u m p t n sort, q quits. The terminal is
// restored on every way out (q, Ctrl-C, an error). `--once` (implied when
// stdout is not a terminal) prints one frame without control sequences.
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "core/strings.h"
#include "core/time.h"

namespace shoal::cli {

namespace {

using api::Json;

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  g_stop = true;
}

struct Row {
  std::string node;
  int index = 0;
  bool telemetry = false;
  bool healthy = true;
  double util = 0;
  double mem_used_mib = 0;
  double mem_total_mib = 0;
  double power_w = 0;
  double temp_c = 0;
  std::string job;
  std::string user;
};

enum class SortKey { kNode, kUtil, kMem, kPower, kTemp };

Result<SortKey> ParseSort(const std::string& s) {
  if (s == "node" || s == "n") return SortKey::kNode;
  if (s == "util" || s == "u") return SortKey::kUtil;
  if (s == "mem" || s == "m") return SortKey::kMem;
  if (s == "power" || s == "p") return SortKey::kPower;
  if (s == "temp" || s == "t") return SortKey::kTemp;
  return InvalidArgument(fmt::format("--sort is util, mem, power, temp or node, not '{}'", s));
}

const char* SortName(SortKey k) {
  switch (k) {
    case SortKey::kNode:
      return "node";
    case SortKey::kUtil:
      return "util";
    case SortKey::kMem:
      return "mem";
    case SortKey::kPower:
      return "power";
    case SortKey::kTemp:
      return "temp";
  }
  return "node";
}

double KeyOf(const Row& r, SortKey k) {
  switch (k) {
    case SortKey::kUtil:
      return r.util;
    case SortKey::kMem:
      return r.mem_used_mib;
    case SortKey::kPower:
      return r.power_w;
    case SortKey::kTemp:
      return r.temp_c;
    case SortKey::kNode:
      return 0;
  }
  return 0;
}

// "0-3,6" (FormatGpuMask) into indices.
std::vector<int> ParseGpuList(const std::string& text) {
  std::vector<int> out;
  for (std::string_view part : Split(text, ',')) {
    const size_t dash = part.find('-');
    auto lo = ParseInt(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : ParseInt(part.substr(dash + 1));
    if (!lo.ok() || !hi.ok() || *lo < 0 || *hi > 63) continue;
    for (int64_t i = *lo; i <= *hi; ++i)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string Fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 1) + "~";
}

std::vector<Row> RowsOf(const Json& nodes) {
  std::vector<Row> rows;
  for (const Json& n : nodes) {
    const std::string name = n.value("name", "");
    std::map<int, std::pair<std::string, std::string>> holders;  // GPU -> (jobs, users)
    for (const Json& j : n.value("jobs", Json::array())) {
      const std::string job = j.contains("job") ? j["job"].dump() : "";
      const std::string user = j.value("user", "");
      for (int g : ParseGpuList(j.value("gpus", ""))) {
        auto& h = holders[g];
        h.first += h.first.empty() ? job : "," + job;
        h.second += h.second.empty() ? user : "," + user;
      }
    }
    for (const Json& g : n.value("gpus", Json::array())) {
      Row r;
      r.node = name;
      r.index = g.value("index", 0);
      r.healthy = g.value("healthy", true);
      r.mem_total_mib = g.value("memory_mib", 0.0);
      if (g.contains("telemetry")) {
        const Json& t = g["telemetry"];
        r.telemetry = true;
        r.util = t.value("util", 0.0);
        r.mem_used_mib = t.value("fb_used_mib", 0.0);
        r.power_w = t.value("power_w", 0.0);
        r.temp_c = t.value("temp_c", 0.0);
        if (r.mem_total_mib <= 0) r.mem_total_mib = r.mem_used_mib + t.value("fb_free_mib", 0.0);
      }
      if (auto h = holders.find(r.index); h != holders.end()) {
        r.job = h->second.first;
        r.user = h->second.second;
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

// Nodes in order of their GPUs' mean key (largest first; by name for
// `node`), and each node's GPUs by the key, so that rows stay grouped.
void SortRows(std::vector<Row>& rows, SortKey key) {
  std::map<std::string, std::pair<double, int>> mean;
  for (const Row& r : rows) {
    auto& m = mean[r.node];
    m.first += KeyOf(r, key);
    m.second += 1;
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (key == SortKey::kNode) return a.node != b.node ? a.node < b.node : a.index < b.index;
    if (a.node != b.node) {
      const auto& ma = mean[a.node];
      const auto& mb = mean[b.node];
      const double va = ma.first / ma.second, vb = mb.first / mb.second;
      return va != vb ? va > vb : a.node < b.node;
    }
    const double ka = KeyOf(a, key), kb = KeyOf(b, key);
    return ka != kb ? ka > kb : a.index < b.index;
  });
}

// Which GPUs a frame shows: on these nodes, held by these jobs, of these
// users (each a comma-separated list; empty: any).
struct RowFilter {
  std::vector<std::string> nodes, jobs, users;

  static bool AnyIn(const std::string& list, const std::vector<std::string>& wanted) {
    if (wanted.empty()) return true;
    for (std::string_view x : Split(list, ','))
      if (std::find(wanted.begin(), wanted.end(), x) != wanted.end()) return true;
    return false;
  }
  bool Keeps(const Row& r) const {
    return AnyIn(r.node, nodes) && AnyIn(r.job, jobs) && AnyIn(r.user, users);
  }
  bool empty() const { return nodes.empty() && jobs.empty() && users.empty(); }
  std::string Describe() const {
    std::vector<std::string> parts;
    if (!nodes.empty()) parts.push_back("node " + Join(nodes, ","));
    if (!jobs.empty()) parts.push_back("job " + Join(jobs, ","));
    if (!users.empty()) parts.push_back("user " + Join(users, ","));
    return Join(parts, ", ");
  }
};

std::vector<std::string> ListOf(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view x : Split(text, ','))
    if (!Trim(x).empty()) out.emplace_back(Trim(x));
  return out;
}

// One frame as lines of at most 80 columns. `max_rows` limits the GPU rows
// (0: all of them); `*first` is the first row shown when they do not all fit
// (scrolled with keys), kept within the rows there are.
std::vector<std::string> Frame(const Json& nodes, SortKey key, const RowFilter& filter,
                               bool interactive, size_t max_rows, size_t* first) {
  std::vector<Row> rows = RowsOf(nodes);
  std::erase_if(rows, [&filter](const Row& r) { return !filter.Keeps(r); });
  SortRows(rows, key);
  int up = 0, allocated = 0, reporting = 0, unhealthy = 0;
  double util = 0, power = 0, mem_used = 0, mem_total = 0;
  for (const Json& n : nodes) {
    if (n.value("state", "") == "up") ++up;
  }
  // The GPU figures are of the rows shown (all of them without a filter).
  for (const Row& r : rows) {
    allocated += r.job.empty() ? 0 : 1;
    unhealthy += r.healthy ? 0 : 1;
    mem_total += r.mem_total_mib;
    if (!r.telemetry) continue;
    ++reporting;
    util += r.util;
    power += r.power_w;
    mem_used += r.mem_used_mib;
  }
  std::vector<std::string> out;
  out.push_back(Fit(fmt::format("shoal top  {} nodes ({} up), {} GPUs: {} allocated, {} unhealthy",
                                nodes.size(), up, rows.size(), allocated, unhealthy),
                    80));
  out.push_back(
      Fit(fmt::format(
              "util {:.0f}% mean over {} GPUs reporting, memory {:.0f}/{:.0f} GiB, power {:.1f} kW",
              reporting > 0 ? util / reporting : 0.0, reporting, mem_used / 1024, mem_total / 1024,
              power / 1000),
          80));
  const std::string only = filter.empty() ? "" : "; only " + filter.Describe();
  out.push_back(Fit(interactive
                        ? fmt::format("sorted by {}{} (u m p t n: sort, j k: scroll, q: quit)",
                                      SortName(key), only)
                        : fmt::format("sorted by {}{}", SortName(key), only),
                    80));
  out.push_back(fmt::format("{:<12} {:>3} {:<12} {:>4} {:>11} {:>5} {:>4} {:>7} {:<8}", "NODE",
                            "GPU", "UTIL", "", "MEM GiB", "POWER", "TEMP", "JOB", "USER"));
  const bool cut = max_rows > 0 && rows.size() > max_rows;
  *first = cut ? std::min(*first, rows.size() - max_rows) : 0;
  const size_t end = cut ? *first + max_rows : rows.size();
  for (size_t i = *first; i < end; ++i) {
    const Row& r = rows[i];
    std::string bar = "[----------]", pct = "   -", mem = "-", power_s = "-", temp = "-";
    if (r.telemetry) {
      const int filled = std::clamp(static_cast<int>(r.util / 10 + 0.5), 0, 10);
      bar = "[" + std::string(static_cast<size_t>(filled), '#') +
            std::string(static_cast<size_t>(10 - filled), '.') + "]";
      pct = fmt::format("{:.0f}%", r.util);
      mem = fmt::format("{:.1f}/{:.0f}", r.mem_used_mib / 1024, r.mem_total_mib / 1024);
      power_s = fmt::format("{:.0f}W", r.power_w);
      temp = fmt::format("{:.0f}C", r.temp_c);
    }
    if (!r.healthy) bar = "[ UNHEALTHY]";
    out.push_back(fmt::format("{:<12} {:>3} {:<12} {:>4} {:>11} {:>5} {:>4} {:>7} {:<8}",
                              Fit(r.node, 12), r.index, bar, pct, Fit(mem, 11), power_s, temp,
                              Fit(r.job.empty() ? "-" : r.job, 7), Fit(r.user, 8)));
  }
  if (cut) {
    out.push_back(fmt::format("GPUs {}-{} of {}{}", *first + 1, end, rows.size(),
                              interactive ? " (j/k or arrows: a row, space/b: a page, g: top)"
                                          : " (a taller terminal shows more)"));
  }
  if (rows.empty()) out.push_back(filter.empty() ? "(no GPUs registered)" : "(no GPU matches)");
  for (std::string& line : out)
    line.erase(line.find_last_not_of(' ') + 1);
  return out;
}

// Raw keys without echo; restored by the destructor on every way out.
class RawTerminal {
 public:
  RawTerminal() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));  // ISIG stays: Ctrl-C still signals
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    std::fputs("\x1b[?25l", stdout);  // hide the cursor
  }
  ~RawTerminal() {
    std::fputs("\x1b[?25h\n", stdout);
    std::fflush(stdout);
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

// The first row shown after a scrolling key (j k, arrows, space b, page
// up/down, g), or nullopt for any other key. Frame keeps it within the rows.
std::optional<size_t> Scrolled(std::string_view typed, size_t first, size_t page) {
  if (typed == "j" || typed == "\x1b[B") return first + 1;
  if (typed == "k" || typed == "\x1b[A") return first > 0 ? first - 1 : 0;
  if (typed == " " || typed == "\x1b[6~") return first + page;
  if (typed == "b" || typed == "\x1b[5~") return first > page ? first - page : 0;
  if (typed == "g") return size_t{0};
  return std::nullopt;
}

size_t TerminalRows() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6) return ws.ws_row;
  return 24;
}

}  // namespace

int RunTop(const std::vector<std::string>& raw) {
  constexpr std::string_view kWho = "shoal top";
  ClientFlags flags;
  bool once = false;
  double interval_s = 2;
  std::string sort = "node";
  CLI::App app{"Every GPU of the cluster, live: utilisation, memory, power, temperature, job.",
               std::string(kWho)};
  AddClientFlags(app, flags);
  app.add_flag("--once", once,
               "print one frame and stop (the default when stdout is no terminal, and with "
               "--json)");
  app.add_option("--interval", interval_s, "seconds between frames, 0.2 to 3600 (default 2)")
      ->type_name("SECONDS");
  app.add_option("--sort", sort, "util, mem, power, temp or node (default node)")->type_name("KEY");
  std::string nodes, jobs, users;
  app.add_option("-w,--node", nodes, "only these nodes' GPUs (comma-separated)")
      ->type_name("NODES");
  app.add_option("-j,--job", jobs, "only the GPUs of these jobs")->type_name("IDS");
  app.add_option("-u,--user", users, "only the GPUs of these users' jobs")->type_name("USERS");
  if (int code = ParseApp(app, raw, kWho); code >= 0) return code;
  if (interval_s < 0.2 || interval_s > 3600) {
    return UsageError(kWho, "--interval is 0.2 to 3600 seconds");
  }
  auto parsed_sort = ParseSort(sort);
  if (!parsed_sort.ok()) return UsageError(kWho, parsed_sort.status().message());
  SortKey key = *parsed_sort;
  const RowFilter filter{ListOf(nodes), ListOf(jobs), ListOf(users)};
  auto client = ApiClient::Open(flags);
  if (!client.ok()) return Fail("top", client.status());
  if (once || flags.json || !::isatty(STDOUT_FILENO)) {
    auto r = client->Get("/v1/nodes");
    if (!r.ok()) return Fail("top", r.status());
    // As every command's --json: the server's answer, once (a live view of
    // JSON would be `watch shoal top --json`).
    if (flags.json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    size_t first = 0;
    for (const std::string& line : Frame((*r)["nodes"], key, filter, false, 0, &first))
      std::printf("%s\n", line.c_str());
    return kExitOk;
  }
  g_stop = false;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  ::sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  int code = kExitOk;
  {
    const bool keys = ::isatty(STDIN_FILENO);
    std::optional<RawTerminal> term;
    term.emplace();
    size_t first = 0;  // the first GPU row shown
    while (!g_stop) {
      auto r = client->Get("/v1/nodes");
      if (!r.ok()) {
        term.reset();
        code = Fail("top", r.status());
        break;
      }
      const size_t height = TerminalRows();
      const size_t page = height > 7 ? height - 7 : 1;  // header, footer and prompt lines
      std::string frame = "\x1b[H\x1b[2J";
      for (const std::string& line : Frame((*r)["nodes"], key, filter, keys, page, &first)) {
        frame += line;
        frame += "\x1b[K\n";
      }
      std::fputs(frame.c_str(), stdout);
      std::fflush(stdout);
      // Wait for the next frame, or a key.
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::duration<double>(interval_s);
      bool redraw = false;
      while (!g_stop && !redraw && std::chrono::steady_clock::now() < deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{STDIN_FILENO, POLLIN, 0};
        const int ready =
            keys
                ? ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count())))
                : (::usleep(static_cast<useconds_t>(std::max<int64_t>(1, left.count()) * 1000)), 0);
        if (ready <= 0) continue;
        char buf[8];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) continue;
        const std::string_view typed(buf, static_cast<size_t>(n));
        if (typed == "q" || typed == "Q") {
          g_stop = true;
        } else if (auto to = Scrolled(typed, first, page)) {
          first = *to;
          redraw = true;
        } else if (auto k = ParseSort(std::string(typed.substr(0, 1))); n == 1 && k.ok()) {
          key = *k;
          redraw = true;
        }
      }
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return code;
}

}  // namespace shoal::cli
