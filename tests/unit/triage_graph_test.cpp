#include <gtest/gtest.h>

#include <map>

#include "engine/evidence/layers.hpp"
#include "engine/triage/triage_graph.hpp"

using namespace iodiag;

namespace {

WalkResult walk(std::map<std::string, LayerState> states) {
    return walk_triage(
        [&](const std::string& l) { return states.count(l) ? states[l] : LayerState::Normal; },
        [](const std::string&) { return std::string(); });
}

}  // namespace

TEST(TriageGraph, StartsAtTheDeviceAndGoesBottomUp) {
    auto r = walk({});
    ASSERT_FALSE(r.trail.empty());
    EXPECT_EQ(r.trail.front().layer, layer::kDevice);
    EXPECT_EQ(r.trail[1].layer, layer::kBlockQueue);
    EXPECT_EQ(r.trail[2].layer, layer::kFilesystem);
}

TEST(TriageGraph, NormalSyscallLeadsToApplicationAndCpuNotToReclaim) {
    auto r = walk({{layer::kSyscall, LayerState::Normal}});
    EXPECT_TRUE(r.visited.count(layer::kCpu));
    EXPECT_FALSE(r.visited.count(layer::kReclaim));
    EXPECT_FALSE(r.visited.count(layer::kCgroup));
}

TEST(TriageGraph, AbnormalSyscallDrillsIntoReclaimLocksCgroupDirtyAndCpu) {
    auto r = walk({{layer::kSyscall, LayerState::Abnormal}});
    for (const auto& l : {layer::kReclaim, layer::kLocks, layer::kCgroup, layer::kDirty, layer::kCpu})
        EXPECT_TRUE(r.visited.count(l)) << l;
}

TEST(TriageGraph, UnobservedSyscallCannotRuleAnythingOut) {
    auto r = walk({{layer::kSyscall, LayerState::NotObserved}});
    for (const auto& l : layer::all()) EXPECT_TRUE(r.visited.count(l)) << l;
}

TEST(TriageGraph, TrailSaysWhereTheWalkWentNext) {
    auto r = walk({{layer::kDevice, LayerState::Abnormal}});
    EXPECT_EQ(r.trail.front().state, LayerState::Abnormal);
    EXPECT_NE(r.trail.front().next.find(layer::kBlockQueue), std::string::npos);
}

TEST(TriageGraph, EveryEdgeJoinsKnownLayers) {
    std::set<std::string> known(layer::known().begin(), layer::known().end());
    for (const auto& e : triage_edges()) {
        EXPECT_TRUE(known.count(e.from)) << e.from;
        EXPECT_TRUE(known.count(e.to)) << e.to;
        EXPECT_FALSE(e.when.empty());
    }
}

TEST(TriageGraph, UnjudgedSyscallCannotRuleItsCausesOut) {
    auto r = walk({{layer::kSyscall, LayerState::Unjudged}});
    for (const auto& l : {layer::kReclaim, layer::kLocks, layer::kCgroup, layer::kDirty}) EXPECT_TRUE(r.visited.count(l)) << l;
}
