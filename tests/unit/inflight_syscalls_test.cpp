// Issue 33: a syscall still waiting when the window ends is counted with its
// time so far (collectors/bpf/inflight_syscalls.hpp): the parts the programs
// charged, the class it waits in now, and only when /proc confirms it.
#include <gtest/gtest.h>

#include "collectors/bpf/inflight_syscalls.hpp"

using namespace iodiag::syscall_bpf;

namespace {

iod_inflight reading_thread() {
    iod_inflight st{};
    st.sys = SYS_PREAD64 + 1;
    st.start_ns = 1'000'000;
    st.ns[CLS_FILESYSTEM] = 20'000;
    st.ns[CLS_CPU] = 5'000;
    st.charged = (1u << CLS_FILESYSTEM) | (1u << CLS_CPU);
    st.ns[CLS_DEVICE] = 999;   // stale: not charged in this syscall
    st.mark_ns = st.start_ns + 25'000;
    st.state = CLS_DEVICE;
    st.offset = 4096;
    return st;
}

}  // namespace

TEST(InFlightSyscalls, ChargedPartsPlusTheCurrentWaitAddUpToItsTimeSoFar) {
    const auto e = exemplar_of_in_flight(7, 8, reading_thread(), 3'025'000);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->tgid, 7u);
    EXPECT_EQ(e->tid, 8u);
    EXPECT_EQ(e->sys, static_cast<unsigned>(SYS_PREAD64));
    EXPECT_TRUE(e->flags & IOD_F_IN_FLIGHT);
    EXPECT_EQ(e->offset, 4096);
    EXPECT_EQ(e->ns[CLS_FILESYSTEM], 20'000u);
    EXPECT_EQ(e->ns[CLS_CPU], 5'000u);
    EXPECT_EQ(e->ns[CLS_DEVICE], 2'000'000u);   // from the mark to the end, not the stale 999
    EXPECT_EQ(e->total_ns, 2'025'000u);   // the end less its start
}

TEST(InFlightSyscalls, OnCpuTimeIsTheFilesystemsOrThePageCacheFillsAsTheProgramCharges) {
    iod_inflight st = reading_thread();
    st.state = CLS_NONE;
    EXPECT_EQ(exemplar_of_in_flight(1, 1, st, st.mark_ns + 100)->ns[CLS_FILESYSTEM], 20'100u);
    st.flags |= IOD_F_MISS_FILL;
    EXPECT_EQ(exemplar_of_in_flight(1, 1, st, st.mark_ns + 100)->ns[CLS_PAGE_CACHE], 100u);
    st.reclaim_depth = 1;
    EXPECT_EQ(exemplar_of_in_flight(1, 1, st, st.mark_ns + 100)->ns[CLS_RECLAIM], 100u);
}

TEST(InFlightSyscalls, ABlockWaitIsTheThrottlesUpToItsCgroupsLastRelease) {
    iod_inflight st = reading_thread();
    const uint64_t end = st.mark_ns + 1'000'000;
    auto e = exemplar_of_in_flight(1, 1, st, end, st.mark_ns + 600'000);
    EXPECT_EQ(e->ns[CLS_CGROUP], 600'000u);
    EXPECT_EQ(e->ns[CLS_DEVICE], 400'000u);
    // A release before this wait began, or bios the thread queued itself: its device's.
    e = exemplar_of_in_flight(1, 1, st, end, st.mark_ns - 1);
    EXPECT_EQ(e->ns[CLS_CGROUP], 0u);
    st.flags |= IOD_F_Q_INLINE;
    e = exemplar_of_in_flight(1, 1, st, end, st.mark_ns + 600'000);
    EXPECT_EQ(e->ns[CLS_CGROUP], 0u);
    EXPECT_EQ(e->ns[CLS_DEVICE], 1'000'000u);
}

TEST(InFlightSyscalls, NothingInFlightOrACompletionWaitIsNoOperation) {
    iod_inflight st = reading_thread();
    EXPECT_FALSE(exemplar_of_in_flight(1, 1, st, st.start_ns));   // no time yet
    st.sys = 0;
    EXPECT_FALSE(exemplar_of_in_flight(1, 1, st, 9'000'000));
    st.sys = SYS_IO_URING_ENTER + 1;   // waits for completions of work done elsewhere
    EXPECT_FALSE(exemplar_of_in_flight(1, 1, st, 9'000'000));
    st.sys = SYS_COUNT + 1;
    EXPECT_FALSE(exemplar_of_in_flight(1, 1, st, 9'000'000));
}

TEST(InFlightSyscalls, ProcSaysWhetherTheThreadIsStillBlockedInThatSyscall) {
    EXPECT_EQ(blocked_syscall_arg0("17 0x3 0x7f1c2a000000 0x400000 0x0 0x0 0x0 0x7ffd 0x7f1c\n", 17), 3u);
    EXPECT_FALSE(blocked_syscall_arg0("0 0x3 0x7f1c2a000000 0x1000 0x0 0x0 0x0 0x7ffd 0x7f1c\n", 17));
    EXPECT_FALSE(blocked_syscall_arg0("running\n", 17));
    EXPECT_FALSE(blocked_syscall_arg0("", 17));
    EXPECT_EQ(blocked_syscall_arg0("74", 74), 0u);
}
