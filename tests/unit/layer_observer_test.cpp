// Who observed a layer: the collectors that ran; when the one that measures it
// could not run (not root, no BTF, a refused program), that it could not and
// why, never a claim that no collector exists for it.
#include <gtest/gtest.h>

#include "engine/triage/layer_table.hpp"

namespace iodiag {
namespace {

Evidence with(std::vector<CollectorStatus> collectors) {
    Evidence ev;
    ev.collectors = std::move(collectors);
    return ev;
}

TEST(LayerObserver, NamesTheCollectorsThatRan) {
    const Evidence ev = with({{"block_bpf", true, "", {"block"}},
                              {"diskstats", true, "", {"block", "device"}},
                              {"syscall_bpf", true, "", {"syscall"}}});
    const std::string by = layer_observer(ev, "block");
    EXPECT_NE(by.find("block_bpf"), std::string::npos) << by;
    EXPECT_NE(by.find("diskstats"), std::string::npos) << by;
    EXPECT_EQ(by.find("syscall_bpf"), std::string::npos) << by;
    EXPECT_EQ(by.find("not observed"), std::string::npos) << by;
}

TEST(LayerObserver, ACollectorThatCouldNotRunSaysSoAndWhy) {
    const Evidence ev = with({{"syscall_bpf", false, "needs root (BPF)", {"syscall", "page_cache"}},
                              {"diskstats", true, "", {"device"}}});
    EXPECT_EQ(layer_observer(ev, "syscall"), "not observed: syscall_bpf could not run: needs root (BPF)");
    EXPECT_EQ(layer_observer(ev, "page_cache"), "not observed: syscall_bpf could not run: needs root (BPF)");
    // One collector that ran is enough: the layer is observed.
    const Evidence mixed = with({{"block_bpf", false, "no BTF", {"block"}}, {"diskstats", true, "", {"block"}}});
    EXPECT_EQ(layer_observer(mixed, "block"), "diskstats");
}

TEST(LayerObserver, WithoutAReasonItStillSaysItCouldNotRun) {
    const Evidence ev = with({{"iouring_bpf", false, "", {"io_uring"}}});
    EXPECT_EQ(layer_observer(ev, "io_uring"), "not observed: iouring_bpf could not run: no reason given");
}

TEST(LayerObserver, NoCollectorForTheLayer) {
    const Evidence ev = with({{"diskstats", true, "", {"device"}}});
    EXPECT_EQ(layer_observer(ev, "filesystem"), "not observed: no collector that ran measures its latency");
}

}  // namespace
}  // namespace iodiag
