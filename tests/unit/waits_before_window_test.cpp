// A syscall already waiting when the window starts gets an entry record then
// (collectors/bpf/waits_before_window.hpp): in the class its kernel stack
// names, timed from the window's start, and marked so.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "collectors/bpf/inflight_syscalls.hpp"
#include "collectors/bpf/waits_before_window.hpp"

using namespace iodiag::syscall_bpf;

namespace {

// A writer held by the dirty limits, as /proc/PID/task/TID/stack prints it.
const char* kDirtyThrottledWriter =
    "[<0>] __schedule+0x3f9/0xb60\n"
    "[<0>] schedule+0x27/0xf0\n"
    "[<0>] schedule_timeout+0x8f/0x160\n"
    "[<0>] io_schedule_timeout+0x4f/0x80\n"
    "[<0>] balance_dirty_pages+0x2f6/0xd40\n"
    "[<0>] balance_dirty_pages_ratelimited_flags+0x2a4/0x3a0\n"
    "[<0>] generic_perform_write+0x14d/0x240\n"
    "[<0>] ext4_buffered_write_iter+0x6d/0x120 [ext4]\n"
    "[<0>] vfs_write+0x236/0x3f0\n"
    "[<0>] ksys_write+0x6b/0xf0\n"
    "[<0>] do_syscall_64+0x58/0x110\n"
    "[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n";

}  // namespace

TEST(WaitsBeforeWindow, TheInnermostKnownFrameNamesTheWait) {
    EXPECT_EQ(class_of_kernel_stack(kDirtyThrottledWriter).cls, static_cast<unsigned>(CLS_DIRTY));
    // A commit wait under fsync: the journal, with its kind.
    const auto commit = class_of_kernel_stack(
        "[<0>] __schedule+0x3f9/0xb60\n[<0>] schedule+0x27/0xf0\n"
        "[<0>] jbd2_log_wait_commit+0xac/0x120 [jbd2]\n[<0>] ext4_sync_file+0x1a2/0x370 [ext4]\n"
        "[<0>] __x64_sys_fsync+0x3b/0x70\n[<0>] do_syscall_64+0x58/0x110\n");
    EXPECT_EQ(commit.cls, static_cast<unsigned>(CLS_JOURNAL));
    EXPECT_NE(commit.journal_kind, 0u);
    // Generic frames only (io_schedule, a folio wait): no class of ours names it.
    EXPECT_EQ(class_of_kernel_stack("[<0>] __schedule+0x3f9/0xb60\n[<0>] io_schedule+0x46/0x70\n"
                                    "[<0>] folio_wait_bit_common+0x13d/0x350\n")
                  .cls,
              static_cast<unsigned>(CLS_OTHER));
    EXPECT_EQ(class_of_kernel_stack("").cls, static_cast<unsigned>(CLS_OTHER));
}

TEST(WaitsBeforeWindow, ItsTimeCountsFromTheWindowsStartInTheClassOfItsWait) {
    const uint64_t start = 5'000'000'000, end = start + 4'000'000'000;
    const iod_inflight st =
        entry_of_wait_before_window(SYS_WRITE, 3, class_of_kernel_stack(kDirtyThrottledWriter), start);
    EXPECT_EQ(st.sys, static_cast<unsigned>(SYS_WRITE) + 1);
    EXPECT_EQ(st.file, 3u);   // the descriptor, resolved by the program at the exit
    EXPECT_TRUE(st.flags & IOD_F_BEFORE_WINDOW);
    EXPECT_EQ(st.charged, 0u);
    // Still waiting at the end: the whole window, all of it the dirty throttle's.
    const auto e = exemplar_of_in_flight(7, 8, st, end);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->total_ns, end - start);
    EXPECT_EQ(e->ns[CLS_DIRTY], end - start);
    EXPECT_TRUE(e->flags & IOD_F_BEFORE_WINDOW);
    EXPECT_TRUE(e->flags & IOD_F_IN_FLIGHT);
}

TEST(WaitsBeforeWindow, OnlyFilesOnADeviceAreStorage) {
    // A pipe and a file of /proc are not storage; neither is a closed descriptor.
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    EXPECT_FALSE(fd_is_storage(static_cast<uint32_t>(getpid()), static_cast<uint64_t>(p[0])));
    close(p[0]);
    close(p[1]);
    const int proc = open("/proc/self/stat", O_RDONLY);
    ASSERT_GE(proc, 0);
    EXPECT_FALSE(fd_is_storage(static_cast<uint32_t>(getpid()), static_cast<uint64_t>(proc)));
    close(proc);
    EXPECT_FALSE(fd_is_storage(static_cast<uint32_t>(getpid()), 1'000'000));
    // This test's own executable, where it lies on a block device's filesystem.
    const int exe = open("/proc/self/exe", O_RDONLY);
    ASSERT_GE(exe, 0);
    struct stat st {};
    ASSERT_EQ(fstat(exe, &st), 0);
    if (major(st.st_dev) != 0) EXPECT_TRUE(fd_is_storage(static_cast<uint32_t>(getpid()), static_cast<uint64_t>(exe)));
    close(exe);
}
