// Command lines as iodiag shows them: argv bytes (NUL-separated, from the
// kernel's record or /proc/PID/cmdline) joined by spaces and cut.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/procfs/proc_cmdline.hpp"

using namespace iodiag;

TEST(ProcCmdline, NulsBecomeSpacesAndTrailingOnesGo) {
    using namespace std::string_literals;
    EXPECT_EQ(cmdline_of_argv("dd\0if=/dev/zero\0of=/mnt/f1\0bs=1M\0"s), "dd if=/dev/zero of=/mnt/f1 bs=1M");
    EXPECT_EQ(cmdline_of_argv("sleep\0"s), "sleep");
    EXPECT_EQ(cmdline_of_argv("a\0\0b\0\0\0"s), "a  b");   // an empty argument stays a space
    EXPECT_EQ(cmdline_of_argv(""), "");                   // a kernel thread's
    EXPECT_EQ(cmdline_of_argv("\0\0"s), "");
}

TEST(ProcCmdline, CutAtTheBound) {
    const std::string arg(300, 'x');
    const std::string raw = std::string("prog\0", 5) + arg + std::string("\0", 1);
    const std::string got = cmdline_of_argv(raw);
    EXPECT_EQ(got.size(), kCmdlineMaxBytes);
    EXPECT_EQ(got.substr(0, 5), "prog ");
    EXPECT_EQ(cmdline_of_argv(raw, 7), "prog xx");
    // A cut that ends on a separator loses it, not a character.
    EXPECT_EQ(cmdline_of_argv(std::string("ab\0cd\0", 6), 3), "ab");
}

TEST(ProcCmdline, ReadsTheFileUnderARootAndCutsIt) {
    const auto root = std::filesystem::temp_directory_path() / ("iodiag-cmdline-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "proc" / "42");
    std::filesystem::create_directories(root / "proc" / "43");
    {
        std::ofstream(root / "proc" / "42" / "cmdline", std::ios::binary) << std::string("fio\0--name=r\0", 13);
        std::ofstream long_one(root / "proc" / "43" / "cmdline", std::ios::binary);
        long_one << "python3" << '\0' << std::string(10000, 'y') << '\0';
    }
    EXPECT_EQ(read_proc_cmdline(root.string(), 42), "fio --name=r");
    EXPECT_EQ(read_proc_cmdline(root.string(), 43).size(), kCmdlineMaxBytes);
    EXPECT_EQ(read_proc_cmdline(root.string(), 44), "");   // gone
    std::filesystem::remove_all(root);
}
