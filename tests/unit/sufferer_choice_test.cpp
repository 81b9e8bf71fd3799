// Who the verdict is about when nobody said (engine/triage/sufferer_choice.hpp):
// the application that lost the most time to other programs, never a bulk job
// whose slow time is its own.
#include <gtest/gtest.h>

#include "engine/triage/sufferer_choice.hpp"

using namespace iodiag;

namespace {

// device_contention_pct: what the others cost it on the device at least
// (device.contention_lost_pct, engine/derive/contention_device.cpp).
Evidence as_if(double time_us, double device_contention_pct, double cpu_pct = 0, double cpu_others_pct = 0) {
    Evidence ev;
    const Provenance p{"derived", "test"};
    ev.add_metric("attr.app.time_us", {}, time_us, "us", p);
    if (device_contention_pct > 0)
        ev.add_metric("device.contention_lost_pct", {{"device", "vdb"}}, device_contention_pct, "pct", p);
    ev.add_metric("attr.sufferer.cpu_pct", {}, cpu_pct, "pct", p);
    ev.add_metric("cpu.others_share_pct", {}, cpu_others_pct, "pct", p);
    return ev;
}

}  // namespace

TEST(SuffererChoice, TheReaderBehindTheBackupIsTheVictim) {
    // The backup has five times the slow time, all its own; the reader lost
    // 70 % of its own to the backup's requests on the device.
    const std::vector<SuffererCandidate> c = {time_lost_to_others(as_if(50e6, 4), "tar cf /backup/db.tar /srv"),
                                              time_lost_to_others(as_if(10e6, 70), "sqlite_load.py")};
    EXPECT_NEAR(c[1].lost_pct, 70, 1e-9);
    EXPECT_EQ(c[1].lost_to, "device vdb 70 %");
    const auto chosen = choose_sufferer(c);
    ASSERT_TRUE(chosen.has_value());
    EXPECT_EQ(*chosen, 1u);
    EXPECT_NE(choice_reason(c, 1).find("sqlite_load.py (chosen) lost"), std::string::npos);
}

TEST(SuffererChoice, AnApplicationAloneOrBarelyTouchedStaysAsRanked) {
    // Nobody lost anything to others: the one with the most slow time stays.
    EXPECT_FALSE(choose_sufferer({time_lost_to_others(as_if(50e6, 0), "a"), time_lost_to_others(as_if(10e6, 0), "b")}));
    // The second lost more in time but under a quarter of its own: it waited
    // mostly for itself, and the first stays.
    EXPECT_FALSE(choose_sufferer({time_lost_to_others(as_if(5e6, 0), "a"), time_lost_to_others(as_if(50e6, 20), "b")}));
    // The first lost more than the second: it stays.
    EXPECT_FALSE(choose_sufferer({time_lost_to_others(as_if(50e6, 60), "a"), time_lost_to_others(as_if(10e6, 90), "b")}));
    EXPECT_FALSE(choose_sufferer({time_lost_to_others(as_if(50e6, 60), "a")}));
}

TEST(SuffererChoice, LossesOnDisjointResourcesAddUpToAtMostAllOfItsTime) {
    // 60 % on a device, and a run-queue delay of 50 % behind others' 80 % of the CPU.
    const SuffererCandidate c = time_lost_to_others(as_if(1e6, 60, 50, 80), "x");
    EXPECT_NEAR(c.lost_pct, 100, 1e-9);   // 60 + 40, capped
    EXPECT_EQ(c.lost_to, "device vdb 60 %, cpu 40 %");
}

TEST(SuffererChoice, ABulkJobWhoseRequestsWereMostlyServedIsNotChosenOverTheReader) {
    // issue 33's shared_light control (seed 91001): a rate-limited backup's
    // 1 MiB requests waited 10 % of their time behind a busy reader's, which
    // held 96.5 % of the busy time. Its share of slow time spent beside them
    // is 94.7 %; what they cost it is a tenth of that, under the bar.
    Evidence backup = as_if(4e6, 0);
    const Provenance p{"derived", "test"};
    backup.add_metric("device.contention_share_pct", {{"device", "loop0"}}, 94.7, "pct", p);
    backup.add_metric("device.contention_lost_pct", {{"device", "loop0"}}, 94.7 * 0.10, "pct", p);
    const std::vector<SuffererCandidate> c = {time_lost_to_others(as_if(3e6, 0.5), "sqlite_lookup.py"),
                                              time_lost_to_others(backup, "backup")};
    EXPECT_NEAR(c[1].lost_pct, 9.47, 1e-9);
    EXPECT_FALSE(choose_sufferer(c));
}
