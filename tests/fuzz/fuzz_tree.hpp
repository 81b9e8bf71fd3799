// Fuzzing the readers that take a directory tree (a collector's `root`, a
// cgroup directory): the input is a packed tree, unpacked into a scratch
// directory before each run.
//
//   @@ proc/diskstats
//   <content>
//   @@ sys/block/vda/queue/scheduler
//   <content>
//   @@ sys/fs/cgroup/app/
//
// A header line "@@ <relative path>" starts a file; its content runs to the
// next header, minus the one newline the packer adds before it (so content
// without a final newline survives). A path ending in '/' is a directory.
// Absolute paths, "." / ".." components, and more than kMaxEntries entries are
// dropped: the tree never reaches outside the scratch directory. Symbolic links
// are not made (a reader must not follow one out of the tree).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace iodiag::fuzz {

// (relative path, content) pairs of a packed tree, in input order.
std::vector<std::pair<std::string, std::string>> unpack_entries(const std::string& packed);
// The inverse, for tests/fuzz/make_seeds.py's C++ users and the tests.
std::string pack_entries(const std::vector<std::pair<std::string, std::string>>& entries);

class ScratchTree {
public:
    static constexpr size_t kMaxEntries = 256;
    ScratchTree();    // a fresh directory under $TMPDIR, /dev/shm or /tmp
    ~ScratchTree();   // removes it
    ScratchTree(const ScratchTree&) = delete;
    ScratchTree& operator=(const ScratchTree&) = delete;

    // Empties the directory and writes the packed tree into it; returns root().
    const std::string& unpack(const std::string& packed);
    const std::string& root() const { return root_; }

private:
    std::string root_;
};

}  // namespace iodiag::fuzz
