#include "server/port_book.h"

#include <algorithm>

namespace shoal::server {

PortBook::PortBook(int first, int last) : first_(first), last_(last), cursor_(first) {}

int PortBook::ConflictEnd(const std::vector<std::string>& nodes, int first, int count) const {
  int end = 0;
  for (const std::string& node : nodes) {
    auto n = by_node_.find(node);
    if (n == by_node_.end()) continue;
    // Blocks never overlap on one node: only the last one starting before
    // our end can reach into [first, first + count).
    auto it = n->second.lower_bound(first + count);
    if (it == n->second.begin()) continue;
    --it;
    if (it->second > first) end = std::max(end, it->second);
  }
  return end;
}

std::optional<int> PortBook::Reserve(uint64_t job, const std::vector<std::string>& nodes,
                                     int count) {
  if (count <= 0 || count > last_ - first_ + 1) return std::nullopt;
  // From the cursor to the end of the range, then from its start.
  for (int pass = 0; pass < 2; ++pass) {
    int p = pass == 0 ? cursor_ : first_;
    const int limit = pass == 0 ? last_ : std::min(last_, cursor_ + count - 1);
    while (p + count - 1 <= limit) {
      const int end = ConflictEnd(nodes, p, count);
      if (end == 0) {
        Hold(job, nodes, p, count);
        cursor_ = p + count > last_ ? first_ : p + count;
        return p;
      }
      p = end;
    }
  }
  return std::nullopt;
}

void PortBook::Hold(uint64_t job, const std::vector<std::string>& nodes, int first, int count) {
  Release(job);
  for (const std::string& node : nodes)
    by_node_[node][first] = first + count;
  by_job_[job] = {nodes, first, count};
}

void PortBook::Release(uint64_t job) {
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return;
  for (const std::string& node : it->second.nodes) {
    auto n = by_node_.find(node);
    if (n == by_node_.end()) continue;
    n->second.erase(it->second.first);
    if (n->second.empty()) by_node_.erase(n);
  }
  by_job_.erase(it);
}

}  // namespace shoal::server
