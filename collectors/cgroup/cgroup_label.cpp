#include "collectors/cgroup/cgroup_label.hpp"

#include <sstream>

#include "collectors/text_file.hpp"

namespace iodiag::cgroup {

ProcessCgroups parse_proc_cgroup(const std::string& text) {
    ProcessCgroups c;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const size_t a = line.find(':');
        const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (line.compare(0, a, "0") == 0 && controllers.empty()) {
            c.v2 = path;
            continue;
        }
        std::istringstream names(controllers);
        for (std::string n; std::getline(names, n, ',');) {
            if (n == "memory") c.memory_v1 = path;
            if (n == "blkio" || n == "io") c.blkio_v1 = path;
        }
    }
    return c;
}

std::string label_of(const std::string& memory_v1, const std::string& blkio_v1, const std::string& v2) {
    std::string v1;
    if (!memory_v1.empty() && memory_v1 != "/") v1 = "memory:" + memory_v1;
    if (!blkio_v1.empty() && blkio_v1 != "/") v1 += (v1.empty() ? "" : ",") + std::string("blkio:") + blkio_v1;
    if (!v1.empty()) return v1;
    if (!v2.empty()) return v2;
    if (!memory_v1.empty() || !blkio_v1.empty()) return "/";
    return "";
}

ProcessCgroups read_process_cgroups(const std::string& root, int pid) {
    const auto text = try_read_text_file(under_root(root, "/proc/" + std::to_string(pid) + "/cgroup"));
    return text ? parse_proc_cgroup(*text) : ProcessCgroups{};
}

}  // namespace iodiag::cgroup
