// The node's container images (--container-image): where a job's image file
// is, and the layout of the cache of unpacked images that the supervisor
// runs jobs from. Shoal never pulls from a registry: an image is a file, an
// OCI image archive or a root-filesystem tarball (agent/image/unpack.h
// unpacks it, in the shoal-image helper).
//
// The cache, one folder per image file (its key, ImageKey):
//
//   <cache>/<key>/rootfs       the unpacked root filesystem
//   <cache>/<key>/config.json  ImageConfigJson: the image's env and work dir
//   <cache>/<key>/size         its size on disk in bytes, for eviction
//   <cache>/<key>/ready        created last: the image is whole; the
//                              supervisor touches it on each use (LRU)
//   <cache>/<key>.lock         users hold LOCK_SH while a job runs from it;
//                              eviction takes LOCK_EX|LOCK_NB
//   <cache>/<key>.unpack       LOCK_EX while one process unpacks the image
//
// Libc, fmt, JSON and job.h's limits only: this file is compiled into
// shoal-step too.
// Thread-safe (no state).
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::agent {

// The image file a job names. An absolute path is returned as is (the
// caller opens it with the job user's rights). Anything else names a file
// in the node's image folder: "docker://" is dropped and each '#', '/' and
// ':' becomes '+' ("busybox:1.35" -> "busybox+1.35"), then <name>,
// <name>.tar, <name>.tar.gz and <name>.tgz are tried in that order.
// InvalidArgument for an empty or too long reference, a ".." component or
// a control character; FailedPrecondition when a name needs an image folder
// and the node has none; NotFound (saying where to put it) when none exists.
Result<std::string> ImageFileFor(std::string_view reference, const std::string& image_dir);

// 16 hex digits that name one version of an image file: a hash of its
// device, inode, size, modification and change times and owner (so a
// rewritten file gets a new key, and the same file the same key whoever
// opens it; a user cannot forge another's file's change time).
std::string ImageKey(const struct stat& st);

struct ImagePaths {
  std::string dir;
  std::string rootfs;
  std::string config;
  std::string size;
  std::string ready;
  std::string lock;
  std::string unpack_lock;
};
ImagePaths PathsOf(const std::string& cache_dir, const std::string& key);

// What a job takes from the image's own configuration (OCI config.Env and
// config.WorkingDir): KEY=VALUE entries, and "" for no working directory.
struct ImageConfig {
  std::vector<std::string> env;
  std::string work_dir;
};
// Our config.json, {"env": [...], "work_dir": "..."}; Internal when damaged.
Result<ImageConfig> ParseImageConfig(std::string_view json);
std::string ImageConfigJson(const ImageConfig& config);

}  // namespace shoal::agent
