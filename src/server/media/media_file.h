// An image file named by a request, read from inside --allowed-media-dir.
// The file is opened once, beneath the folder, through no symbolic link
// (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has
// it, else one openat(O_NOFOLLOW) per path component), and every check (a
// regular file, its size) is made on that descriptor: a file swapped for a
// symlink between a check and the open cannot be served. Every refusal —
// missing, outside, through a symlink, not a regular file — is the same 403
// with the same message, so answers reveal nothing about files outside.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qvl {

enum class BeneathOpen {
  Auto,            // openat2 when the kernel has it (Linux 5.6), else the walk
  WalkComponents,  // the fallback, always (for its tests)
};

// `path` is absolute (it must lie in `root`) or relative to `root`; a
// file:// prefix is the caller's to strip. `param` names the field in errors.
std::vector<uint8_t> read_media_file(const std::string& root, const std::string& path, size_t max_bytes,
                                     const std::string& param, BeneathOpen how = BeneathOpen::Auto);

}  // namespace qvl
