// The NVMe SMART collector on a whole tree: sysroot/sys/class/nvme/* (model,
// serial, namespaces, hwmon temperatures) and admin/<ctrl>.smart.bin /
// .identify.bin as the raw admin-command answers.
#include "collectors/nvme/nvme_smart_collector.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"

IODIAG_FUZZ_TARGET(nvme_smart_collector) {
    using namespace iodiag;
    static fuzz::ScratchTree tree;
    const std::string root = tree.unpack(fuzz::text(data, size));
    NvmeSmartCollector c([&](const std::string&) { return nvme::make_file_admin_source(root + "/admin"); });
    CollectOptions opts;
    opts.root = root + "/sysroot";
    Evidence ev;
    ev.collectors.push_back(c.start(opts));
    if (ev.collectors.back().available) c.finish(ev);
    fuzz::require_finite(ev);
}
