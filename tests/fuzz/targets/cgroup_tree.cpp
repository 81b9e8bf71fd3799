// The cgroup collector on a whole tree: /proc/mounts, the v1 and v2
// hierarchies it names, every group's files, /sys/dev/block/*/uevent for
// device names; and the BPF cgroup-id names (the same tree, walked by inode).
#include "collectors/cgroup/cgroup_collector.hpp"
#include "collectors/cgroup/cgroup_ids.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"

IODIAG_FUZZ_TARGET(cgroup_tree) {
    using namespace iodiag;
    static fuzz::ScratchTree tree;
    CollectOptions opts;
    opts.root = tree.unpack(fuzz::text(data, size));
    double now = 0;
    CgroupCollector c([&now] { return now += 1.0; });
    Evidence ev;
    ev.collectors.push_back(c.start(opts));
    if (ev.collectors.back().available) c.finish(ev);
    fuzz::require_finite(ev);
    CgroupIdNames names(opts.root);
    names.label(1, 2, 3);
}
