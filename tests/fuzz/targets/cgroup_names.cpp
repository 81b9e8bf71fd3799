// The names of cgroups (collectors/cgroup/cgroup_names.hpp): cgroup labels as
// the collectors write them, named from their path's shape and from a host's
// runtime and kubelet state (JSON files, etc-hosts, /etc/passwd) that anything
// on the host may have written. The input is a packed tree; its file "labels"
// holds one label per line, each named against the tree.
#include <sstream>

#include "collectors/cgroup/cgroup_names.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"
#include "collectors/text_file.hpp"

IODIAG_FUZZ_TARGET(cgroup_names) {
    using namespace iodiag;
    static fuzz::ScratchTree tree;
    const std::string& root = tree.unpack(fuzz::text(data, size));
    Evidence ev;
    std::istringstream labels(try_read_text_file(root + "/labels").value_or(""));
    for (std::string label; std::getline(labels, label);) {
        const cgroup::Naming n = cgroup::name_cgroup(label, root);
        if (n.kind.empty()) std::abort();   // every label gets a kind
        ev.add_metric("m", {{"cgroup", label}}, 1, "count", {"test", "test"});
    }
    add_cgroup_names(ev, root);
}
