#include "collectors/procfs/proc_cmdline.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "collectors/text_file.hpp"

namespace iodiag {

std::string cmdline_of_argv(std::string_view raw, size_t max_bytes) {
    std::string out(raw.substr(0, max_bytes));
    for (char& c : out)
        if (c == '\0') c = ' ';
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

std::string read_proc_cmdline(const std::string& root, unsigned pid) {
    // The first kCmdlineMaxBytes only: a command line can be megabytes.
    const std::string path = under_root(root, "/proc/" + std::to_string(pid) + "/cmdline");
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char buf[kCmdlineMaxBytes];
    size_t got = 0;
    while (got < sizeof(buf)) {
        const ssize_t n = read(fd, buf + got, sizeof(buf) - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    close(fd);
    return cmdline_of_argv(std::string_view(buf, got));
}

}  // namespace iodiag
