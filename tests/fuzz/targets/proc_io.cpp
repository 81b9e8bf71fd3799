// proc_io: /proc/[pid]/{stat,io,comm} of every process (who dirtied the data),
// read twice (the start and the end of a window) and turned into metrics.
#include "collectors/procfs/proc_io.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"

IODIAG_FUZZ_TARGET(proc_io) {
    using namespace iodiag;
    static fuzz::ScratchTree tree;
    const std::string& root = tree.unpack(fuzz::text(data, size));
    const auto after = read_proc_io(root);
    Evidence ev;
    add_proc_io_metrics({}, after, 1.0, ev);
    add_proc_io_metrics(after, after, 0.0, ev);
    fuzz::require_finite(ev);
}
