// Slurm's compressed host lists ("gpu[01-04,07],login1"): what
// SLURM_JOB_NODELIST holds and `scontrol show hostnames` expands. Checked
// against Slurm 22.05's scontrol: names are kept in the order given; runs of
// names that share a prefix and differ only in a trailing number are
// bracketed, consecutive numbers of the same zero-padding as ranges.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal {

// "n1,n2,n3,m1" -> "n[1-3],m1". Order is kept: only neighbours merge.
std::string CompressHostList(const std::vector<std::string>& hosts);

// "rack[1-2]-n[01-02],login" -> rack1-n01, rack1-n02, rack2-n01, rack2-n02,
// login. Errors name the malformed part; a list longer than `max_hosts`
// is an error (a typo like n[1-100000000] must not exhaust memory).
Result<std::vector<std::string>> ExpandHostList(std::string_view list, size_t max_hosts = 1 << 20);

}  // namespace shoal
