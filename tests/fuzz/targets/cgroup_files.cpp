// The cgroup file parsers, one chosen by the first byte: pressure, flat keyed
// (memory.stat, memory.events), MAJ:MIN value (v1 *_device), nested keyed
// (io.stat, io.max, io.latency), v1 io_service_bytes / io_serviced, and
// /proc/mounts (where the hierarchies are).
#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "collectors/cgroup/cgroup_model.hpp"
#include "collectors/cgroup/cgroup_v1.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(cgroup_files) {
    using namespace iodiag;
    if (size == 0) return;
    const std::string text = fuzz::text(data + 1, size - 1);
    const std::string path = "/sys/fs/cgroup/g/file";
    fuzz::rejects_with<SourceError>(path, [&] {
        switch (data[0] % 6) {
            case 0: cgroup::parse_pressure(text, path); break;
            case 1: cgroup::parse_flat_keyed(text, path); break;
            case 2: cgroup::parse_device_values(text, path); break;
            case 3: cgroup::parse_nested_keyed(text, path); break;
            case 4: cgroup::parse_v1_rw_stat(text, path); break;
            case 5: cgroup::parse_mounts(text); break;
        }
    });
}
