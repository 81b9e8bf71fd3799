#include "app/progress.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include "collectors/procfs/diskstats.hpp"
#include "collectors/text_file.hpp"

namespace iodiag::cli {

namespace {

std::string thousands(std::uint64_t n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
}

}  // namespace

WindowProgress::WindowProgress(double window_s, bool wanted, const std::string& root)
    : window_s_(window_s), root_(root) {
    active_ = wanted && window_s > kMinWindowS && ::isatty(STDERR_FILENO) == 1;
    if (!active_) return;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(under_root(root_, "/sys/block"), ec))
        disks_.push_back(e.path().filename().string());
    ios_at_start_ = block_ios_now();
}

WindowProgress::~WindowProgress() {
    if (active_ && shown_second_ >= 0) std::fputs("\r\033[K", stderr);
}

std::optional<std::uint64_t> WindowProgress::block_ios_now() {
    const std::string path = under_root(root_, "/proc/diskstats");
    try {
        const auto all = parse_diskstats(read_text_file(path), path);
        std::uint64_t sum = 0;
        for (const auto& d : disks_)
            if (auto it = all.find(d); it != all.end()) sum += it->second.reads + it->second.writes;
        return sum;
    } catch (const SourceError&) {
        return std::nullopt;
    }
}

std::string WindowProgress::line(double elapsed_s, double window_s, std::optional<std::uint64_t> block_ios) {
    const long done = static_cast<long>(std::floor(elapsed_s));
    const long total = static_cast<long>(std::lround(window_s));
    const long left = std::max(0L, static_cast<long>(std::ceil(window_s - elapsed_s)));
    std::string s = "iodiag: observing " + std::to_string(done) + " s of " + std::to_string(total) + " s, " +
                    std::to_string(left) + " s left";
    if (block_ios) s += ", " + thousands(*block_ios) + " block I/Os completed";
    return s + " (Ctrl-C ends early)";
}

void WindowProgress::update(double elapsed_s) {
    if (!active_) return;
    const long second = static_cast<long>(std::floor(elapsed_s));
    if (second == shown_second_) return;
    shown_second_ = second;
    std::optional<std::uint64_t> ios;
    if (ios_at_start_)
        if (auto now = block_ios_now(); now && *now >= *ios_at_start_) ios = *now - *ios_at_start_;
    std::fprintf(stderr, "\r\033[K%s", line(elapsed_s, window_s_, ios).c_str());
    std::fflush(stderr);
}

}  // namespace iodiag::cli
