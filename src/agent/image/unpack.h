// Unpacks a container image file into the node's image cache (the layout is
// in agent/launch/image_store.h). Run as root by the shoal-image helper,
// which the supervisor starts with the image file, opened with the job
// user's rights, as its stdin.
//
// An image is an OCI image archive (a tar, maybe compressed, with
// oci-layout, index.json and blobs/sha256/ at its root: `podman save
// --format oci-archive`, `skopeo copy ... oci-archive:`, `docker save` from
// Docker 25) or a root-filesystem tarball (`podman export`, `tar -C rootfs
// -c .`), maybe compressed (gzip, bzip2, xz, zstd).
//
// Archives are hostile input: nothing is written outside the new rootfs
// (".." and paths through symbolic links are refused, leading '/' dropped),
// device nodes and FIFOs are skipped (the runtime makes /dev), whiteouts never
// follow a symbolic link. Files keep their numeric owners and modes, or all
// become one user's (ImageOwner: an image for a rootless runtime).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace shoal::agent {

// Whose every file and folder of an unpacked image is: a rootless runtime
// runs as the job's user in a user namespace that maps only that user, in
// which files of any other owner (root's /etc, /usr) could not be changed
// even by the runtime and its hooks (a CDI hook's ld.so.cache, the mount
// points it makes). As enroot unpacks images for pyxis.
struct ImageOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Unpacks the image in `fd` (a seekable regular file; read from offset 0,
// several times) as <cache_dir>/<key>, unless that is ready already, then
// evicts (EvictImages) down to `limit_bytes`, keeping `key`. Concurrent
// callers for one key wait for each other (flock on <key>.unpack); the
// image is marked ready only once whole. An image whose layers write more
// than `limit_bytes` is refused (a cache that small cannot hold it);
// limit_bytes <= 0 means no limit and no eviction.
//
// Changes the process's working directory while it extracts (libarchive
// resolves hard links against it): call it from a single-threaded process.
// Errors name the stage: "not an image: ...", "image layer 2 of 3: ...".
// With `owner`, every entry is that user's whatever the image records.
Status UnpackImage(int fd, const std::string& cache_dir, const std::string& key,
                   int64_t limit_bytes, std::optional<ImageOwner> owner = std::nullopt);

// While the ready images in `cache_dir` (their `size` files) add up to more
// than `limit_bytes`, removes the least recently used one (by the mtime of
// its `ready`) that no job holds (its <key>.lock takes LOCK_EX|LOCK_NB),
// never `keep`. The lock files stay: removing one that another process has
// open would let two holders think they are alone.
Status EvictImages(const std::string& cache_dir, int64_t limit_bytes, const std::string& keep);

}  // namespace shoal::agent
