// Playbooks: loading with positions, the id/file-name check, rendering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engine/rules/playbooks.hpp"
#include "rule_test_catalog.hpp"

using namespace iodiag;
using iodiag::testing::with_code;

namespace {

const char* kValid = R"(id: block-scheduler
title: "Choose the I/O scheduler"
applies_to: [block_queue.scheduler_none_on_rotational]
why: >
  A seeking disk pays for every jump
  between distant sectors.
steps:
  - do: "Show the scheduler"
    command: "cat /sys/block/DEV/queue/scheduler"
  - do: "Explain it to the team"
verify:
  - {do: "Await falls", command: "iostat -x DEV 1 10"}
rollback:
  - do: "Write the old one back"
    command: |
      echo PREVIOUS > /sys/block/DEV/queue/scheduler
      rm /etc/udev/rules.d/60-iosched.rules
)";

TEST(Playbooks, LoadsAValidPlaybook) {
    const auto set = load_playbook_from_string(kValid, "playbooks/block-scheduler.yaml");
    ASSERT_TRUE(set.ok());
    EXPECT_TRUE(set.diagnostics.empty());
    ASSERT_EQ(set.ids(), (std::vector<std::string>{"block-scheduler"}));
    const Playbook* p = set.find("block-scheduler");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->title, "Choose the I/O scheduler");
    EXPECT_EQ(p->applies_to, (std::vector<std::string>{"block_queue.scheduler_none_on_rotational"}));
    ASSERT_EQ(p->steps.size(), 2u);
    EXPECT_EQ(p->steps[0].command, "cat /sys/block/DEV/queue/scheduler");
    EXPECT_EQ(p->steps[1].command, "");
    ASSERT_EQ(p->verify.size(), 1u);
    ASSERT_EQ(p->rollback.size(), 1u);
    EXPECT_EQ(p->pos.line, 1);
    EXPECT_EQ(set.find("other"), nullptr);
}

TEST(Playbooks, RendersStepsCommandsVerifyAndRollback) {
    const auto set = load_playbook_from_string(kValid, "block-scheduler.yaml");
    const std::string text = render_playbook(*set.find("block-scheduler"));
    EXPECT_NE(text.find("Choose the I/O scheduler  [block-scheduler]"), std::string::npos) << text;
    EXPECT_NE(text.find("A seeking disk pays for every jump between distant sectors."), std::string::npos) << text;
    EXPECT_NE(text.find("Steps:\n  1. Show the scheduler\n       $ cat /sys/block/DEV/queue/scheduler\n"
                        "  2. Explain it to the team\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("Verify:\n  1. Await falls\n"), std::string::npos) << text;
    // Multi-line commands keep one prompt per line.
    EXPECT_NE(text.find("       $ echo PREVIOUS > /sys/block/DEV/queue/scheduler\n"
                        "       $ rm /etc/udev/rules.d/60-iosched.rules\n"),
              std::string::npos)
        << text;
}

TEST(Playbooks, ReportsProblemsWithPositions) {
    auto set = load_playbook_from_string("id: x\ntitle: t\nwhy: w\nsteps:\n  - {command: ls}\nnotes: n\n", "x.yaml");
    EXPECT_FALSE(set.ok());
    auto e3 = with_code(set.diagnostics, "E003");
    ASSERT_EQ(e3.size(), 1u);
    EXPECT_EQ(e3[0].pos.line, 6);
    EXPECT_EQ(e3[0].pos.column, 1);
    auto e2 = with_code(set.diagnostics, "E002");
    ASSERT_EQ(e2.size(), 1u);   // the step lacks `do`
    EXPECT_EQ(e2[0].pos.line, 5);
    EXPECT_EQ(e2[0].pos.column, 5);
    EXPECT_TRUE(set.playbooks.empty());

    set = load_playbook_from_string("id: other\ntitle: t\nwhy: w\nsteps: []\n", "dir/x.yaml");
    auto e15 = with_code(set.diagnostics, "E015");
    ASSERT_EQ(e15.size(), 1u);
    EXPECT_EQ(e15[0].pos.line, 1);
    EXPECT_EQ(e15[0].pos.column, 5);

    set = load_playbook_from_string("id: x\ntitle: t\nwhy: w\nsteps: do this\n", "x.yaml");
    ASSERT_EQ(with_code(set.diagnostics, "E009").size(), 1u);
    EXPECT_EQ(with_code(set.diagnostics, "E009")[0].pos.line, 4);

    set = load_playbook_from_string("id: x\ntitle: [\n", "x.yaml");
    ASSERT_EQ(with_code(set.diagnostics, "E001").size(), 1u);

    set = load_playbook_from_string("", "x.yaml");
    EXPECT_EQ(with_code(set.diagnostics, "E009").size(), 1u);   // an empty file is not a playbook
}

TEST(Playbooks, DirectoryLoadDuplicatesAndRuleCrossCheck) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("iodiag_pb_" + std::to_string(::getpid()));
    fs::create_directories(dir / "sub");
    std::ofstream(dir / "a.yaml") << "id: a\ntitle: t\nwhy: w\nsteps: [{do: x}]\napplies_to: [r.known, r.gone]\n";
    std::ofstream(dir / "b.yml") << "id: b\ntitle: t\nwhy: w\nsteps: [{do: x}]\n";
    std::ofstream(dir / "notes.txt") << "not yaml";
    std::ofstream(dir / "sub" / "a.yaml") << "id: a\ntitle: t\nwhy: w\nsteps: [{do: x}]\n";
    const auto set = load_playbooks({dir.string(), (dir / "sub" / "a.yaml").string()});
    const auto missing = load_playbooks({(dir / "none").string()});
    fs::remove_all(dir);
    EXPECT_EQ(set.ids(), (std::vector<std::string>{"a", "b"}));
    const auto dup = with_code(set.diagnostics, "E007");
    ASSERT_EQ(dup.size(), 1u);
    EXPECT_NE(dup[0].pos.file.find("sub"), std::string::npos);
    EXPECT_EQ(with_code(missing.diagnostics, "E014").size(), 1u);

    RuleSet rules;
    Rule r;
    r.id = "r.known";
    rules.rules.push_back(r);
    const auto cross = check_playbook_rules(set, rules);
    ASSERT_EQ(cross.size(), 1u);
    EXPECT_EQ(cross[0].code, "W003");
    EXPECT_FALSE(cross[0].error);
    EXPECT_NE(cross[0].message.find("r.gone"), std::string::npos);
}

}  // namespace
