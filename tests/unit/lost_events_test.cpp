// Lost events (collector.lost_events, with what stays complete) reach the
// verdict's text and JSON when non-zero, and only then.
#include <gtest/gtest.h>

#include "collectors/lost_events.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/lost_events.hpp"

namespace iodiag {
namespace {

Evidence evidence_with_losses() {
    Evidence ev;
    add_lost_events(ev, "syscall_bpf",
                    {{"exemplars_ringbuf_full", 1204, "shares are from in-kernel sums and are complete", "counter A"},
                     {"task_storage_unavailable", 0, "never shown", "counter B"}});
    add_lost_events(ev, "block_bpf", {{"inflight_slot_busy", 3, "all other requests are complete", "counter C"}});
    return ev;
}

TEST(LostEvents, OnlyNonZeroCountsWithWhatStaysComplete) {
    const Evidence ev = evidence_with_losses();
    ASSERT_NE(ev.find_metric("collector.lost_events", {{"collector", "syscall_bpf"}, {"what", "task_storage_unavailable"}}),
              nullptr);   // a zero is a measurement too
    const auto lost = lost_events_of(ev);
    ASSERT_EQ(lost.size(), 2u);
    EXPECT_EQ(lost[0].collector, "block_bpf");
    EXPECT_EQ(lost[1].collector, "syscall_bpf");
    EXPECT_EQ(lost[1].what, "exemplars_ringbuf_full");
    EXPECT_EQ(lost[1].count, 1204u);
    EXPECT_EQ(lost[1].complete, "shares are from in-kernel sums and are complete");
    EXPECT_EQ(lost[1].source, "counter A");
}

TEST(LostEvents, RenderedInTextAndJson) {
    Verdict v;
    v.lost_events = lost_events_of(evidence_with_losses());
    const std::string text = render_text(v);
    EXPECT_NE(text.find("LOST EVENTS"), std::string::npos);
    EXPECT_NE(text.find("syscall_bpf exemplars_ringbuf_full: 1,204 lost; shares are from in-kernel sums and are complete"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("task_storage_unavailable"), std::string::npos);
    const auto j = render_json(v);
    ASSERT_EQ(j["lost_events"].size(), 2u);
    EXPECT_EQ(j["lost_events"][1]["count"], 1204);
    EXPECT_EQ(j["lost_events"][1]["complete"], "shares are from in-kernel sums and are complete");

    Verdict none;
    EXPECT_EQ(render_text(none).find("LOST EVENTS"), std::string::npos);
    EXPECT_TRUE(render_json(none)["lost_events"].empty());
}

}  // namespace
}  // namespace iodiag
