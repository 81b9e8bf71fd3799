// The "who suffered" line: every field describes the same process, the one
// of the application the findings judge, and says where it was read from.
// It once read "app postgres; comm chromium": the application with the most
// syscall time beside the single process with the most slow time, the
// cgroup with the most slow time and the file of yet another process.
#include <gtest/gtest.h>

#include "engine/derive/derived_metrics.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/who_suffered.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const Provenance kP{"tracepoint", "test"};
const std::string kDb = "/system.slice/postgresql@15-main.service";
const std::string kDesktop = "/user.slice/user-1000.slice/session-2.scope";

void proc(Evidence& ev, const std::string& pid, const std::string& comm, const std::string& cgroup, double us) {
    ev.add_metric("syscall.proc.time_us", {{"pid", pid}, {"comm", comm}, {"cgroup", cgroup}}, us, "us", kP);
}

void slow_op(Evidence& ev, const std::string& pid, const std::string& comm, const std::string& cgroup,
             const std::string& file, double us) {
    Exemplar e;
    e.kind = "syscall";
    e.unit = "us";
    e.labels = {{"pid", pid}, {"comm", comm}, {"cgroup", cgroup}, {"file", file}, {"op", "write"}};
    e.values["total_us"] = us;
    ev.exemplars.push_back(e);
}

// A database and an unrelated desktop process: the desktop's single process
// has the most slow time, the database's processes the most time together.
Evidence database_and_desktop() {
    Evidence ev;
    proc(ev, "4242", "postgres", kDb, 900);
    proc(ev, "4243", "postgres", kDb, 800);
    proc(ev, "777", "chromium", kDesktop, 1200);
    slow_op(ev, "4242", "postgres", kDb, "base/16384/2619", 300);
    slow_op(ev, "4242", "postgres", kDb, "pg_wal/000000010000000000000004", 100);
    slow_op(ev, "4243", "postgres", kDb, "base/16384/1249", 350);
    slow_op(ev, "777", "ThreadPoolForeg", kDesktop, "Default/History-journal", 900);
    slow_op(ev, "4242", "postgres", kDb, "?", 50);   // a syscall on no file
    // What the syscall collector says of the machine's slow set as a whole.
    ev.add_fact("attr.slow.top_comm", {}, "chromium", kP);
    ev.add_fact("attr.slow.top_pid", {}, "777", kP);
    ev.add_fact("attr.slow.top_cgroup", {}, kDb, kP);
    ev.add_fact("attr.slow.top_file", {}, "Default/History-journal", kP);
    return ev;
}

std::map<std::string, WhoField> who_of(Evidence ev) {
    add_derived_metrics(ev);
    std::map<std::string, WhoField> out;
    for (const auto& w : who_suffered(ev)) out[w.what] = w;
    return out;
}

}  // namespace

TEST(WhoSuffered, EveryFieldIsTheProcessOfTheApplicationTheFindingsJudge) {
    Evidence ev = database_and_desktop();
    ev.add_fact("attr.app.name", {}, "postgres", kP);
    const auto who = who_of(ev);
    ASSERT_EQ(who.size(), 5u);
    EXPECT_EQ(who.at("app").value, "postgres");
    EXPECT_EQ(who.at("comm").value, "postgres");
    EXPECT_EQ(who.at("pid").value, "4242");   // 400 us of slow exemplars against 4243's 350
    EXPECT_EQ(who.at("file").value, "base/16384/2619");
    EXPECT_EQ(who.at("cgroup").value, kDb);
    // Each says where it was read from.
    EXPECT_NE(who.at("app").source.find("attr.app.name"), std::string::npos);
    EXPECT_NE(who.at("pid").source.find("slow syscall exemplars"), std::string::npos);
    EXPECT_NE(who.at("file").source.find("pid 4242"), std::string::npos);
    EXPECT_NE(who.at("cgroup").source.find("pid 4242"), std::string::npos);
}

TEST(WhoSuffered, TheCollectorsSlowestProcessIsTakenWhenItIsTheApplications) {
    Evidence ev = database_and_desktop();
    ev.add_fact("attr.app.name", {}, "chromium", kP);
    const auto who = who_of(ev);
    EXPECT_EQ(who.at("app").value, "chromium");
    EXPECT_EQ(who.at("pid").value, "777");
    EXPECT_NE(who.at("pid").source.find("attr.slow.top_pid"), std::string::npos);
    // Its thread's exemplars carry the thread's name: found by pid.
    EXPECT_EQ(who.at("file").value, "Default/History-journal");
    EXPECT_EQ(who.at("cgroup").value, kDesktop);   // not attr.slow.top_cgroup, the database's
}

TEST(WhoSuffered, WithoutTheApplicationsOwnBreakdownTheCommandWithTheMostTime) {
    // attr.app.name missing (its exemplars did not cover it): the derived
    // attr.slow.top_app, postgres's processes summed, and still one process.
    const auto who = who_of(database_and_desktop());
    EXPECT_EQ(who.at("app").value, "postgres");
    EXPECT_NE(who.at("app").source.find("attr.slow.top_app"), std::string::npos);
    EXPECT_EQ(who.at("pid").value, "4242");
    EXPECT_EQ(who.at("cgroup").value, kDb);
    EXPECT_EQ(who.at("file").value, "base/16384/2619");
}

TEST(WhoSuffered, NoSyscallCollectorNoLine) {
    EXPECT_TRUE(who_of(Evidence{}).empty());
}

TEST(WhoSuffered, ARecordedBundleNoLongerMixesTwoProcesses) {
    // Recorded with postgres (pgbench) beside an unrelated chromium: the
    // collector's slowest process is chromium's, its top cgroup and top file
    // postgres's. The line once read "app postgres; comm chromium; pid 12484;
    // file pg_wal/...; cgroup <postgres's>".
    const Evidence ev = load_bundle(std::string(IODIAG_FIXTURES) + "/bundles/pgbench_writer.json");
    const Verdict v = analyze(ev, shipped_rules());
    std::map<std::string, std::string> who;
    for (const auto& w : v.who_suffered) who[w.what] = w.value;
    EXPECT_EQ(who["app"], "postgres");
    EXPECT_EQ(who["pid"], "11943");
    EXPECT_EQ(who["file"], "pg_wal/000000010000000000000004");
    EXPECT_EQ(who["cgroup"], "memory:/process_api/be09928981ad822e7a4ae2265f94ca31");
    const std::string text = render_text(v);
    const size_t line = text.find("  Who:");
    ASSERT_NE(line, std::string::npos) << text;
    const std::string who_line = text.substr(line, text.find('\n', line) - line);
    EXPECT_EQ(who_line.find("chromium"), std::string::npos) << who_line;
    EXPECT_EQ(who_line.find("12484"), std::string::npos) << who_line;
    EXPECT_NE(who_line.find("app postgres"), std::string::npos) << who_line;
    const auto j = render_json(v);
    EXPECT_EQ(j["who_suffered"]["comm"], "postgres");
    EXPECT_EQ(j["who_suffered"]["pid"], "11943");
    EXPECT_TRUE(j["who_suffered"]["sources"].contains("cgroup"));
}

// Two programs with one command name (issue 33): who suffered is a process of
// the application judged, named by its command line, never the other's.
TEST(WhoSuffered, TwoProgramsWithOneCommNameAreNotMixedUp) {
    Evidence ev;
    const std::string cg = "/user.slice";
    ev.add_metric("syscall.proc.time_us", {{"pid", "10"}, {"comm", "python3"}, {"app", "python3 ingest.py"}, {"cgroup", cg}},
                  500, "us", kP);
    ev.add_metric("syscall.proc.time_us", {{"pid", "20"}, {"comm", "python3"}, {"app", "python3 bulk.py"}, {"cgroup", cg}},
                  5000, "us", kP);
    slow_op(ev, "20", "python3", cg, "bulk.dat", 4000);
    ev.add_fact("attr.slow.top_comm", {}, "python3", kP);
    ev.add_fact("attr.slow.top_pid", {}, "20", kP);
    ev.add_fact("attr.app.name", {}, "python3 ingest.py", kP);
    const auto who = who_of(ev);
    EXPECT_EQ(who.at("app").value, "python3 ingest.py");
    EXPECT_EQ(who.at("pid").value, "10");   // not the bulk loader's 20, whose comm is the same
    EXPECT_EQ(who.at("comm").value, "python3");
}

// --victim: the operator's application is who suffered, and the verdict says
// it was given.
TEST(WhoSuffered, AGivenVictimIsSaidToBeGiven) {
    Evidence ev = database_and_desktop();
    ev.add_fact("attr.app.name", {}, "chromium", kP);
    ev.add_fact("attr.victim.given", {}, "postgresql@15-main.service", {"config", "--victim"});
    ev.add_fact("attr.victim.application", {}, "postgres", kP);
    const auto who = who_of(ev);
    EXPECT_EQ(who.at("app").value, "postgres");
    EXPECT_NE(who.at("app").source.find("--victim"), std::string::npos);
    EXPECT_EQ(who.at("given").value, "postgresql@15-main.service");
    EXPECT_NE(who.at("given").source.find("not found by iodiag"), std::string::npos);
}

// The culprit is the other program the first finding that names one blames;
// for writeback, whose data the flusher wrote.
TEST(WhoSuffered, CausedByIsTheNeighborTheFirstFindingBlames) {
    auto fact = [](const std::string& name, const std::string& text) {
        CitedValue c;
        c.name = name;
        c.text = text;
        return c;
    };
    Finding note;
    note.rule_id = "syscall.qd1";
    note.severity = Severity::Info;
    note.evidence = {fact("device.neighbor_comm", "not me")};
    Finding device;
    device.rule_id = "contention.device_neighbor";
    device.instance = "vdb";
    device.evidence = {fact("device.neighbor_comm", "tar cf /backup/db.tar /srv"), fact("device.neighbor_pid", "900")};
    std::map<std::string, std::string> by;
    for (const auto& w : caused_by({note, device})) by[w.what] = w.value;
    EXPECT_EQ(by["app"], "tar cf /backup/db.tar /srv");
    EXPECT_EQ(by["pid"], "900");
    EXPECT_EQ(by["finding"], "contention.device_neighbor");
    device.evidence.push_back(fact("device.neighbor_dirtier", "dd if=/dev/zero of=/data/f (pid 77)"));
    by.clear();
    for (const auto& w : caused_by({device})) by[w.what] = w.value;
    EXPECT_EQ(by["app"], "dd if=/dev/zero of=/data/f");
    EXPECT_EQ(by["pid"], "77");
    EXPECT_TRUE(caused_by({note}).empty());
}
