// Window progress: the line it shows, and that it shows only on a terminal,
// only when asked for and only for windows longer than a few seconds.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "app/progress.hpp"

using iodiag::cli::WindowProgress;

namespace {

const std::string kTree = std::string(IODIAG_FIXTURES) + "/procsys/guest_6_18";

// Points stderr at a pseudo-terminal for the life of the object and collects
// what was written to it.
class StderrOnPty {
public:
    StderrOnPty() {
        if (openpty(&master_, &slave_, nullptr, nullptr, nullptr) != 0) return;
        std::fflush(stderr);
        saved_ = dup(STDERR_FILENO);
        dup2(slave_, STDERR_FILENO);
        fcntl(master_, F_SETFL, O_NONBLOCK);
    }
    ~StderrOnPty() { restore(); }
    bool ok() const { return saved_ >= 0; }
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        dup2(saved_, STDERR_FILENO);
        close(saved_);
        saved_ = -1;
    }
    std::string drain() {
        std::string out;
        char buf[4096];
        ssize_t n;
        while ((n = read(master_, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
        return out;
    }

private:
    int master_ = -1, slave_ = -1, saved_ = -1;
};

}  // namespace

TEST(WindowProgress, LineSaysTimeLeftAndBlockIos) {
    EXPECT_EQ(WindowProgress::line(12.4, 30, 4210),
              "iodiag: observing 12 s of 30 s, 18 s left, 4,210 block I/Os completed (Ctrl-C ends early)");
    EXPECT_EQ(WindowProgress::line(0, 10, std::nullopt), "iodiag: observing 0 s of 10 s, 10 s left (Ctrl-C ends early)");
    EXPECT_EQ(WindowProgress::line(11, 10, 0), "iodiag: observing 11 s of 10 s, 0 s left, 0 block I/Os completed (Ctrl-C ends early)");
}

TEST(WindowProgress, NothingWhenStderrIsNotATerminal) {
    if (isatty(STDERR_FILENO)) GTEST_SKIP() << "stderr is a terminal here";
    WindowProgress p(30, true);
    EXPECT_FALSE(p.active());
}

TEST(WindowProgress, OnATerminalOnlyWhenWantedAndLongEnough) {
    StderrOnPty pty;
    if (!pty.ok()) GTEST_SKIP() << "no pseudo-terminal available";
    {
        WindowProgress json_output(30, false, kTree);
        EXPECT_FALSE(json_output.active());
        WindowProgress short_window(2, true, kTree);
        EXPECT_FALSE(short_window.active());
        WindowProgress p(30, true, kTree);
        EXPECT_TRUE(p.active());
        p.update(1.2);
        p.update(1.7);   // same second: not redrawn
        p.update(2.1);
    }
    pty.restore();
    const std::string out = pty.drain();
    EXPECT_NE(out.find("observing 1 s of 30 s, 29 s left"), std::string::npos) << out;
    EXPECT_NE(out.find("observing 2 s of 30 s, 28 s left"), std::string::npos) << out;
    EXPECT_EQ(out.find("observing 1 s", out.find("observing 1 s") + 1), std::string::npos) << "redrawn: " << out;
    EXPECT_NE(out.rfind("\r\033[K"), std::string::npos) << "line not erased at the end";
}
