// The fingerprint is the de-duplication key of tickets and alerts: the same
// causes on the same host give the same fingerprint whatever the figures, and
// another cause gives another one. Checked on real recordings.
#include <gtest/gtest.h>

#include "engine/evidence/bundle.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const std::string kBundles = std::string(IODIAG_FIXTURES) + "/bundles/";

Verdict verdict_of(const std::string& name) { return analyze(load_bundle(kBundles + name + ".json"), shipped_rules()); }

}  // namespace

TEST(Fingerprint, TwoRecordingsOfOneFaultGiveTheSameFingerprint) {
    const Verdict a = verdict_of("fsync_storm");
    const Verdict b = verdict_of("fsync_storm_again");
    ASSERT_FALSE(a.findings.empty());
    // Two separate recordings: other windows, other figures ...
    EXPECT_NE(a.window.start_unix, b.window.start_unix);
    ASSERT_TRUE(a.findings.front().share_pct && b.findings.front().share_pct);
    EXPECT_NE(*a.findings.front().share_pct, *b.findings.front().share_pct);
    // ... the same causes, so one ticket.
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.fingerprint.size(), 16u);
}

TEST(Fingerprint, AnotherFaultGivesAnotherFingerprint) {
    const Verdict storm = verdict_of("fsync_storm");
    for (const char* other : {"dirty_throttle", "slow_device", "blkio_throttle", "fsync_storm_xfs"}) {
        SCOPED_TRACE(other);
        EXPECT_NE(verdict_of(other).fingerprint, storm.fingerprint);
    }
}

TEST(Fingerprint, AnotherHostGivesAnotherFingerprint) {
    Evidence ev = load_bundle(kBundles + "fsync_storm.json");
    const std::string here = analyze(ev, shipped_rules()).fingerprint;
    ev.host = "another-host";
    EXPECT_NE(analyze(ev, shipped_rules()).fingerprint, here);
}
