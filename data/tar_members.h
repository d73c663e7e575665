// The regular files of a tar archive and where their bytes lie, read from the headers alone
// (each member's data is skipped, never read): POSIX ustar (name and prefix), GNU long names
// ('L') and base-256 sizes, and PAX extended headers ('x': path and size; global 'g' headers are
// skipped), so archives from GNU tar, bsdtar and Python's tarfile in any format list alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of the first data byte
  uint64_t size = 0;
};

struct TarListing {
  std::vector<TarMember> members;  // regular files, in archive order
  // Empty for a whole archive; else why the listing stopped early (a header that fails its
  // checksum, a member running past the end of the file), naming the offset and the member.
  std::string damage;
};

// rt::Error naming path where it cannot be opened or read.
TarListing list_tar_members(const std::string& path);

}  // namespace rt
