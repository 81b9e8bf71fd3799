// Evidence lookups by name go through an index (NameIndex); these check that
// the index answers exactly what a scan of the public vectors would, however
// the vectors were changed between lookups.
#include <gtest/gtest.h>

#include "engine/evidence/evidence.hpp"

namespace iodiag {
namespace {

const Provenance kP{"file", "/proc/test"};

TEST(EvidenceLookup, FindsByNameAndExactLabelsAfterAdds) {
    Evidence ev;
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", "vda"}}), nullptr);
    ev.add_metric("disk.util_pct", {{"device", "vda"}}, 10, "pct", kP);
    ev.add_metric("disk.util_pct", {{"device", "vdb"}}, 20, "pct", kP);
    ev.add_metric("disk.util_pct", {}, 30, "pct", kP);
    ASSERT_NE(ev.find_metric("disk.util_pct", {{"device", "vdb"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", "vdb"}})->value, 20);
    EXPECT_EQ(ev.find_metric("disk.util_pct")->value, 30);   // {} matches the unlabelled entry only
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", "vdc"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.await_ms", {{"device", "vda"}}), nullptr);

    // An add after a lookup is seen by the next lookup.
    ev.add_metric("disk.await_ms", {{"device", "vda"}}, 1.5, "ms", kP);
    ASSERT_NE(ev.find_metric("disk.await_ms", {{"device", "vda"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.await_ms", {{"device", "vda"}})->value, 1.5);

    ev.add_fact("queue.scheduler", {{"device", "vda"}}, "none", kP);
    EXPECT_EQ(ev.find_fact("queue.scheduler", {{"device", "vda"}})->value, "none");
    ev.add_fact("queue.scheduler", {{"device", "vdb"}}, "mq-deadline", kP);
    EXPECT_EQ(ev.find_fact("queue.scheduler", {{"device", "vdb"}})->value, "mq-deadline");
}

TEST(EvidenceLookup, FirstEntryInVectorOrderWins) {
    Evidence ev;
    ev.add_metric("x", {}, 1, "count", kP);
    ev.add_metric("x", {}, 2, "count", kP);
    EXPECT_EQ(ev.find_metric("x")->value, 1);
    EXPECT_EQ(ev.find_metric("x"), &ev.metrics[0]);
}

TEST(EvidenceLookup, FirstEntryWinsAlsoAmongEntriesAppendedAfterALookup) {
    Evidence ev;
    ev.add_metric("disk.util_pct", {{"device", "vda"}}, 1, "pct", kP);
    ASSERT_NE(ev.find_metric("disk.util_pct", {{"device", "vda"}}), nullptr);
    // Appended after the index was built: it is extended, and the entry
    // already there stays the one found.
    ev.add_metric("disk.util_pct", {{"device", "vda"}}, 2, "pct", kP);
    ev.add_metric("disk.util_pct", {{"device", "vdb"}}, 3, "pct", kP);
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", "vda"}})->value, 1);
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", "vdb"}})->value, 3);
    // Hundreds of devices under one name: each found by its own labels.
    for (int i = 0; i < 500; ++i) ev.add_metric("disk.await_ms", {{"device", "sd" + std::to_string(i)}}, i, "ms", kP);
    for (int i = 0; i < 500; i += 37)
        EXPECT_EQ(ev.find_metric("disk.await_ms", {{"device", "sd" + std::to_string(i)}})->value, i);
    EXPECT_EQ(ev.find_metric("disk.await_ms", {{"device", "sd500"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.await_ms", {{"device", "sd1"}, {"op", "read"}}), nullptr);
}

TEST(EvidenceLookup, SeesDirectPushesEraseAndCopies) {
    Evidence ev;
    ev.histograms.push_back({"block.d2c_us", {{"device", "vda"}}, "us", {}, kP});
    EXPECT_NE(ev.find_histogram("block.d2c_us", {{"device", "vda"}}), nullptr);
    ev.histograms.push_back({"block.q2c_us", {{"device", "vda"}}, "us", {}, kP});
    EXPECT_NE(ev.find_histogram("block.q2c_us", {{"device", "vda"}}), nullptr);

    // Same size and storage after an erase and a push: the shifted entries are still found.
    ev.metrics.reserve(8);
    ev.add_metric("a", {{"i", "1"}}, 1, "count", kP);
    ev.add_metric("b", {}, 2, "count", kP);
    ev.add_metric("a", {{"i", "2"}}, 3, "count", kP);
    EXPECT_EQ(ev.find_metric("a", {{"i", "2"}})->value, 3);
    ev.metrics.erase(ev.metrics.begin() + 1);
    ev.add_metric("c", {}, 4, "count", kP);
    EXPECT_EQ(ev.find_metric("c")->value, 4);   // before any lookup that finds the index stale
    ASSERT_NE(ev.find_metric("a", {{"i", "2"}}), nullptr);
    EXPECT_EQ(ev.find_metric("a", {{"i", "2"}})->value, 3);
    EXPECT_EQ(ev.find_metric("c")->value, 4);
    EXPECT_EQ(ev.find_metric("b"), nullptr);

    // A copy answers from its own vectors.
    Evidence copy = ev;
    copy.metrics[0].value = 42;
    EXPECT_EQ(copy.find_metric("a", {{"i", "1"}})->value, 42);
    EXPECT_EQ(copy.find_metric("a", {{"i", "1"}}), &copy.metrics[0]);
    EXPECT_EQ(ev.find_metric("a", {{"i", "1"}})->value, 1);
    Evidence assigned;
    assigned.add_metric("z", {}, 9, "count", kP);
    EXPECT_NE(assigned.find_metric("z"), nullptr);
    assigned = ev;
    EXPECT_EQ(assigned.find_metric("z"), nullptr);
    EXPECT_EQ(assigned.find_metric("c")->value, 4);
}

}  // namespace
}  // namespace iodiag
