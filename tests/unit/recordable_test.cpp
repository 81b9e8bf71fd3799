// A live run whose collector wrote a value no bundle holds: the value is left
// out and counted, and the run still has a verdict (engine/evidence/recordable.hpp).
#include <gtest/gtest.h>

#include <cmath>

#include "app/command_options.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/recordable.hpp"
#include "engine/evidence/value_bounds.hpp"

using namespace iodiag;

namespace {

const Provenance kP{"file", "test"};

Evidence with_bad_values() {
    Evidence ev;
    ev.window.duration_s = 1;
    ev.add_metric("block.requests", {{"device", "vda"}}, 10, "count", kP);
    ev.add_metric("block.requests", {{"device", "vda"}}, 11, "count", kP);          // the same series again
    ev.add_metric("disk.read_iops", {{"device", "vdb"}}, -5e9, "1/s", kP);          // a negative rate
    ev.add_metric("disk.util_pct", {{"device", "vdc"}}, std::nan(""), "pct", kP);   // add_metric leaves it out itself
    ev.add_metric("disk.util_pct", {{"device", std::string(kMaxLabelChars + 10, 'x')}}, 5, "pct", kP);
    ev.add_fact("queue.scheduler", {{"device", "vda"}}, "none", kP);
    ev.add_fact("queue.scheduler", {{"device", "vda"}}, "mq-deadline", kP);
    return ev;
}

}  // namespace

TEST(Recordable, WhatABundleRefusesIsLeftOutAndSaid) {
    Evidence ev = with_bad_values();
    const auto done = drop_unrecordable(ev);
    EXPECT_EQ(done.size(), 4u);
    ASSERT_NE(ev.find_metric("block.requests", {{"device", "vda"}}), nullptr);
    EXPECT_EQ(ev.find_metric("block.requests", {{"device", "vda"}})->value, 10);   // the first kept
    EXPECT_EQ(ev.find_metric("disk.read_iops", {{"device", "vdb"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", "vdc"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.util_pct", {{"device", std::string(kMaxLabelChars, 'x')}})->value, 5);
    EXPECT_EQ(ev.find_fact("queue.scheduler", {{"device", "vda"}})->value, "none");
    // What is left is a bundle the reader takes.
    EXPECT_NO_THROW(parse_bundle(bundle_text(ev)));
}

TEST(Recordable, ALiveRunKeepsItsVerdictAndCountsWhatItLeftOut) {
    const Evidence recorded = cli::as_recorded(with_bad_values());
    const Metric* lost = recorded.find_metric("collector.lost_events", {{"collector", "bundle"}, {"what", "unrecordable_values"}});
    ASSERT_NE(lost, nullptr);
    EXPECT_EQ(lost->value, 4);
    // Nothing to say when every value is one a bundle holds.
    Evidence fine;
    fine.add_metric("block.requests", {{"device", "vda"}}, 10, "count", kP);
    EXPECT_EQ(cli::as_recorded(fine).find_metric("collector.lost_events", {{"collector", "bundle"}, {"what", "unrecordable_values"}}),
              nullptr);
}
