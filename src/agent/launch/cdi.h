// The Container Device Interface (CDI) specs that the NVIDIA container
// toolkit writes (`nvidia-ctk cdi generate`, into /etc/cdi or /var/run/cdi):
// what a container needs for each GPU besides its device file, chiefly the
// driver's user-space libraries (libcuda.so, libnvidia-ml.so) bound in from
// the host, their symlinks and ld cache made by hooks, and the control
// device files. The agent reads them for each container step and hands the
// step's edits to its supervisor (docs/containers.md).
//
// Only specs of kind nvidia.com/gpu are read, and only files owned by root
// and writable by nobody else (their hooks may run as root). A device is
// matched by the names nvidia-ctk gives it: a GPU's index ("0", "1", ...,
// its default) or UUID ("GPU-..."), a MIG slice's "<GPU index>:<MIG index>"
// or UUID ("MIG-...").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/steps.h"
#include "core/status.h"

namespace shoal::agent {

struct CdiSpec {
  std::string kind;
  CdiEdits common;  // the spec's own containerEdits: for any of its devices
  std::vector<std::pair<std::string, CdiEdits>> devices;
};

// One spec's text, YAML or JSON. Pure.
Result<CdiSpec> ParseCdiSpec(std::string_view text);

// The CDI names of one of a step's GPUs. Pure.
std::vector<std::string> CdiNamesOf(const StepGpu& gpu);

// The edits for a step's GPUs from `specs`: each named device's, and its
// spec's common ones once. Pure.
CdiEdits CdiEditsFor(const std::vector<CdiSpec>& specs, const std::vector<StepGpu>& gpus);

// Reads the *.yaml, *.yml and *.json specs of `dirs` (those that do not
// exist are no error); a file it skips (not root's, writable by others,
// unreadable, malformed) is named in `problems`.
std::vector<CdiSpec> LoadCdiSpecs(const std::vector<std::string>& dirs,
                                  std::vector<std::string>& problems);

}  // namespace shoal::agent
