#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>

#include <string>

#include "collectors/procfs/psi.hpp"
#include "collectors/text_file.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;

TEST(PsiParse, SomeAndFullTotals) {
    const auto t = parse_psi(read_text_file(kGuest + "/proc/pressure/io"), "io");
    EXPECT_EQ(t.some_us, 2699831u);
    EXPECT_EQ(t.full_us, 2237727u);
    // cpu on kernels before 5.13 has no "full" line.
    const auto cpu = parse_psi("some avg10=1.00 avg60=0.50 avg300=0.10 total=42\n", "cpu");
    EXPECT_EQ(cpu.some_us, 42u);
    EXPECT_FALSE(cpu.full_us);
}

TEST(PsiParse, MalformedInputNamesFileAndLine) {
    auto expect_error = [](const std::string& text, const std::string& fragment) {
        try {
            parse_psi(text, "/proc/pressure/io");
            ADD_FAILURE() << "no error for: " << text;
        } catch (const SourceError& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error("", "/proc/pressure/io: no 'some' line");
    expect_error("full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", "no 'some' line");
    expect_error("some avg10=0.00 avg60=0.00 avg300=0.13 tot", "/proc/pressure/io:1: no total=");
    expect_error("some avg10=0.00 total=12x\n", "/proc/pressure/io:1 total: expected an unsigned number");
    expect_error("some total=1\nsome total=2\n", "/proc/pressure/io:2: second 'some' line");
    expect_error("this is not psi\n", "/proc/pressure/io:1: expected a 'some' or 'full' line");
}

TEST(PsiMetrics, ShareOfOurWindow) {
    Evidence ev;
    PsiTotals a{1'000'000, 500'000}, b{1'500'000, 600'000};
    add_psi_metrics("io", a, b, 2.0, "/proc/pressure/io", ev);  // 0.5 s of 2 s, 0.1 s of 2 s
    ASSERT_NE(ev.find_metric("psi.io_some_pct"), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("psi.io_some_pct")->value, 25);
    EXPECT_DOUBLE_EQ(ev.find_metric("psi.io_full_pct")->value, 5);
    EXPECT_EQ(ev.find_metric("psi.io_full_pct")->unit, "pct");
}

// Re-weighted per-CPU stall times can give "full" a delta a hair above
// "some" over a short stalled window: never reported above it.
TEST(PsiMetrics, FullIsNeverAboveSome) {
    Evidence ev;
    PsiTotals a{1'000'000, 900'000}, b{1'090'000, 991'000};
    add_psi_metrics("io", a, b, 0.1, "/proc/pressure/io", ev);
    ASSERT_NE(ev.find_metric("psi.io_full_pct"), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("psi.io_some_pct")->value, 90);
    EXPECT_DOUBLE_EQ(ev.find_metric("psi.io_full_pct")->value, 90);
}

TEST(PsiMetrics, BackwardsTotalIsNotReportedAndOverrunIsCapped) {
    Evidence ev;
    PsiTotals a{1'000'000, 500'000}, b{900'000, 1'600'000};
    add_psi_metrics("memory", a, b, 1.0, "/proc/pressure/memory", ev);
    EXPECT_EQ(ev.find_metric("psi.memory_some_pct"), nullptr);
    ASSERT_NE(ev.find_metric("psi.memory_full_pct"), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("psi.memory_full_pct")->value, 100);
}

TEST(PsiCollector, FixtureTree) {
    PsiCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_TRUE(st.reason.empty()) << st.reason;
    Evidence ev;
    c.finish(ev);
    for (const char* n : {"psi.io_some_pct", "psi.io_full_pct", "psi.memory_some_pct", "psi.memory_full_pct"}) {
        ASSERT_NE(ev.find_metric(n), nullptr) << n;
        EXPECT_DOUBLE_EQ(ev.find_metric(n)->value, 0) << n;  // same file twice
    }
}

TEST(PsiCollector, PsiOffIsUnavailableWithTheReason) {
    PsiCollector c;
    CollectOptions opts;
    opts.root = kGuest + "/does-not-exist";
    const auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("/does-not-exist/proc/pressure/io: No such file or directory (kernel without "
                             "CONFIG_PSI, or booted with psi=0?)"),
              std::string::npos)
        << st.reason;
    EXPECT_NE(st.reason.find("/proc/pressure/memory"), std::string::npos) << st.reason;
}

TEST(PsiRead, ErrorsSayPsiMayBeOff) {
    EXPECT_EQ(pressure_read_error("/proc/pressure/io", EOPNOTSUPP),
              "/proc/pressure/io: Operation not supported (psi=0?)");
    EXPECT_EQ(pressure_read_error("/proc/pressure/io", EACCES), "/proc/pressure/io: Permission denied");
    try {
        read_pressure_file(kGuest + "/proc/pressure/cpu");  // not in the fixture
        ADD_FAILURE() << "no error";
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("/proc/pressure/cpu: No such file or directory"), std::string::npos);
    }
}

TEST(PsiCollector, TruncatedAndGarbageFilesAreUnavailableNamingThem) {
    PsiCollector c;
    CollectOptions opts;
    opts.root = kBroken;
    const auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find(kBroken + "/proc/pressure/io:1: no total="), std::string::npos) << st.reason;
    EXPECT_NE(st.reason.find(kBroken + "/proc/pressure/memory:1"), std::string::npos) << st.reason;
}

TEST(PsiCollector, RealProc) {
    PsiCollector c;
    const auto st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << "PSI not available here: " << st.reason;
    usleep(100 * 1000);
    Evidence ev;
    c.finish(ev);
    ASSERT_NE(ev.find_metric("psi.io_some_pct"), nullptr);
    for (const auto& m : ev.metrics) {
        EXPECT_GE(m.value, 0) << m.name;
        EXPECT_LE(m.value, 100) << m.name;
    }
    // "full" (all tasks stalled) cannot exceed "some".
    if (auto full = ev.find_metric("psi.io_full_pct")) {
        EXPECT_LE(full->value, ev.find_metric("psi.io_some_pct")->value + 1e-9);
    }
}
