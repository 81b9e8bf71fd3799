// /sys/block/*/queue/*, mq/*/nr_tags, loop/backing_file, dev files: the block
// queue configuration collector on a whole tree.
#include "collectors/sysfs/block_queue_config.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"

IODIAG_FUZZ_TARGET(block_queue_config) {
    using namespace iodiag;
    static fuzz::ScratchTree tree;
    CollectOptions opts;
    opts.root = tree.unpack(fuzz::text(data, size));
    BlockQueueConfigCollector c;
    Evidence ev;
    ev.collectors.push_back(c.start(opts));
    if (ev.collectors.back().available) c.finish(ev);
    fuzz::require_finite(ev);
}
