// Descriptors released off the exit path (collectors/bpf/deferred_release.hpp):
// closed in this process at once, held by a child until it exits.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "collectors/bpf/deferred_release.hpp"

using namespace iodiag;

// The write ends of two pipes go to the child: closed here on return, and
// each pipe's reader sees end-of-file only once the child has closed its
// copies (when it exits). The child's standard streams are not this
// process's: a reader of our stdout is not held up by it.
TEST(DeferredRelease, ClosesOurCopiesAndAChildHoldsThemUntilItExits) {
    int a[2], b[2];
    ASSERT_EQ(pipe(a), 0);
    ASSERT_EQ(pipe(b), 0);
    const std::string how = release_off_exit_path({a[1], b[1]});
    EXPECT_EQ(how.rfind("handed to pid ", 0), 0u) << how;
    for (int fd : {a[1], b[1]}) {
        errno = 0;
        EXPECT_EQ(fcntl(fd, F_GETFD), -1);
        EXPECT_EQ(errno, EBADF);
    }
    for (int fd : {a[0], b[0]}) {
        pollfd p{fd, POLLIN, 0};
        ASSERT_EQ(poll(&p, 1, 10000), 1) << "no end-of-file within 10 s";
        char c;
        EXPECT_EQ(read(fd, &c, 1), 0);
        close(fd);
    }
}

TEST(DeferredRelease, NothingToReleaseSpawnsNothing) {
    EXPECT_EQ(release_off_exit_path({}), "nothing to release");
}

// Released AtExit, the child holds its copies (and the kernel's closes wait)
// until this process exits or lets the children go: the pipe's reader sees no
// end-of-file before that, and sees it after.
TEST(DeferredRelease, AtExitTheChildHoldsItsCopiesUntilLetGo) {
    int a[2];
    ASSERT_EQ(pipe(a), 0);
    DeferredRelease d;
    d.hand_over({a[1]});
    const std::string how = d.release(DeferredRelease::When::AtExit);
    EXPECT_EQ(how.rfind("handed to pid ", 0), 0u) << how;
    errno = 0;
    EXPECT_EQ(fcntl(a[1], F_GETFD), -1);   // our copy is closed at once
    EXPECT_EQ(errno, EBADF);
    pollfd p{a[0], POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 300), 0) << "the child let go before it was told to";
    let_deferred_children_go();
    ASSERT_EQ(poll(&p, 1, 10000), 1) << "no end-of-file within 10 s of letting the child go";
    char c;
    EXPECT_EQ(read(a[0], &c, 1), 0);
    close(a[0]);
}

// What the collectors' link hand-overs read instead of a flag of their own.
TEST(DeferredRelease, HoldsWhatWasHandedOverUntilReleased) {
    DeferredRelease d;
    EXPECT_FALSE(d.holding());
    d.hand_over({});
    EXPECT_FALSE(d.holding()) << "nothing handed over";
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    d.hand_over({p[1]});
    EXPECT_TRUE(d.holding());
    EXPECT_EQ(d.release().rfind("handed to pid ", 0), 0u);
    EXPECT_FALSE(d.holding());
    close(p[0]);
}
