// choose_attach_mode decides from probe results alone: a mock probe stands in
// for the kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "collectors/bpf/bpf_features.hpp"

namespace iodiag {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Return;

class MockProbe : public FeatureProbe {
public:
    MOCK_METHOD(std::string, btf_available, (), (override));
    MOCK_METHOD(bool, tracepoint_exists, (const std::string&, const std::string&), (override));
    MOCK_METHOD(bool, tp_btf_loads, (const std::string&), (override));
    MOCK_METHOD(bool, raw_tp_attaches, (const std::string&), (override));
    MOCK_METHOD(bool, fentry_attaches, (const std::string&), (override));
    MOCK_METHOD(std::string, last_failure, (), (const, override));
};

const std::vector<std::string> kTps{"block_rq_issue", "block_rq_complete"};

TEST(ChooseAttachMode, PrefersTpBtfWhenEveryProgramLoads) {
    MockProbe p;
    EXPECT_CALL(p, btf_available()).WillOnce(Return(""));
    EXPECT_CALL(p, tp_btf_loads(_)).WillRepeatedly(Return(true));
    EXPECT_CALL(p, raw_tp_attaches(_)).Times(0);
    const AttachPlan plan = choose_attach_mode(p, kTps);
    EXPECT_EQ(plan.mode, AttachMode::TpBtf);
    EXPECT_EQ(plan.reason, "");
}

TEST(ChooseAttachMode, FallsBackToRawTpAndSaysWhy) {
    MockProbe p;
    EXPECT_CALL(p, btf_available()).WillOnce(Return(""));
    EXPECT_CALL(p, tp_btf_loads("block_rq_issue")).WillOnce(Return(true));
    EXPECT_CALL(p, tp_btf_loads("block_rq_complete")).WillOnce(Return(false));
    EXPECT_CALL(p, last_failure()).WillRepeatedly(Return("tp_btf block_rq_complete: load: Invalid argument"));
    EXPECT_CALL(p, raw_tp_attaches(_)).WillRepeatedly(Return(true));
    const AttachPlan plan = choose_attach_mode(p, kTps);
    EXPECT_EQ(plan.mode, AttachMode::RawTp);
    EXPECT_THAT(plan.reason, HasSubstr("block_rq_complete: load: Invalid argument"));
    EXPECT_THAT(plan.reason, HasSubstr("raw_tp"));
}

TEST(ChooseAttachMode, NoneWithoutBtfNamesTheReason) {
    MockProbe p;
    EXPECT_CALL(p, btf_available()).WillOnce(Return("/sys/kernel/btf/vmlinux does not exist"));
    EXPECT_CALL(p, tp_btf_loads(_)).Times(0);
    const AttachPlan plan = choose_attach_mode(p, kTps);
    EXPECT_EQ(plan.mode, AttachMode::None);
    EXPECT_THAT(plan.reason, HasSubstr("/sys/kernel/btf/vmlinux"));
}

TEST(ChooseAttachMode, NoneWhenNeitherFormAttaches) {
    MockProbe p;
    EXPECT_CALL(p, btf_available()).WillOnce(Return(""));
    EXPECT_CALL(p, tp_btf_loads(_)).WillRepeatedly(Return(false));
    EXPECT_CALL(p, raw_tp_attaches(_)).WillRepeatedly(Return(false));
    EXPECT_CALL(p, last_failure()).WillRepeatedly(Return("load: Operation not permitted"));
    const AttachPlan plan = choose_attach_mode(p, kTps);
    EXPECT_EQ(plan.mode, AttachMode::None);
    EXPECT_THAT(plan.reason, HasSubstr("Operation not permitted"));
}

TEST(KernelFeatureProbe, FixtureRootWithoutBtfSaysSo) {
    KernelFeatureProbe probe(IODIAG_FIXTURES);
    EXPECT_THAT(probe.btf_available(), HasSubstr("sys/kernel/btf/vmlinux does not exist"));
    EXPECT_FALSE(probe.tracepoint_exists("block", "block_rq_issue"));
    EXPECT_THAT(probe.last_failure(), HasSubstr("block:block_rq_issue"));
}

}  // namespace
}  // namespace iodiag
