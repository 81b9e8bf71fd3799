// write_file_atomically: the whole new content or the old file, never a
// temporary left behind, and an error that names the path and the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/evidence/atomic_file.hpp"

namespace fs = std::filesystem;
using iodiag::write_file_atomically;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::path(::testing::TempDir()) / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST(AtomicFile, ReplacesTheFileWithTheWholeContentAndLeavesNoTemporary) {
    const auto dir = fresh_dir("iodiag-atomic-replace");
    const std::string path = (dir / "out.json").string();
    write_file_atomically(path, "old\n");
    // Larger than any single write() is guaranteed to take in one go.
    const std::string big(8 << 20, 'x');
    write_file_atomically(path, big);
    EXPECT_EQ(read_all(path), big);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
    fs::remove_all(dir);
}

TEST(AtomicFile, AMissingDirectoryIsAnErrorNamingThePathAndTheReason) {
    try {
        write_file_atomically("/nonexistent-iodiag-dir/out.json", "x");
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("/nonexistent-iodiag-dir/out.json.tmp."), std::string::npos) << what;
        EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
    }
}

TEST(AtomicFile, AFailedRenameKeepsTheOldFileAndRemovesTheTemporary) {
    const auto dir = fresh_dir("iodiag-atomic-rename");
    // A non-empty directory under the final name: rename() over it fails.
    const fs::path target = dir / "out";
    fs::create_directories(target / "child");
    EXPECT_THROW(write_file_atomically(target.string(), "new"), std::runtime_error);
    EXPECT_TRUE(fs::is_directory(target / "child"));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
    fs::remove_all(dir);
}
