// Progress of an observation window on a terminal: "observing: 12 s of 30 s,
// 18 s left, 4,210 block I/Os completed (Ctrl-C ends early)", rewritten in
// place on stderr and erased when the window ends. Only when asked for (the
// verdict is text), only when stderr is a terminal, only for windows longer
// than a few seconds: never in JSON or Markdown output, never in a log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace iodiag::cli {

class WindowProgress {
public:
    static constexpr double kMinWindowS = 3.0;

    // `wanted`: the caller's decision (text output); the terminal and length
    // checks are made here. `root` prefixes /proc and /sys (tests).
    WindowProgress(double window_s, bool wanted, const std::string& root = "/");
    ~WindowProgress();   // erases the line
    WindowProgress(const WindowProgress&) = delete;
    WindowProgress& operator=(const WindowProgress&) = delete;

    bool active() const { return active_; }
    // Redraws when the displayed second changed; cheap otherwise.
    void update(double elapsed_s);

    // The text of the line (no terminal control), for tests.
    static std::string line(double elapsed_s, double window_s, std::optional<std::uint64_t> block_ios);

private:
    // Completed block I/Os on whole disks since the window began, from
    // /proc/diskstats (nullopt when unreadable): the events that are cheap to
    // know while the window runs.
    std::optional<std::uint64_t> block_ios_now();

    bool active_ = false;
    double window_s_ = 0;
    long shown_second_ = -1;
    std::string root_;
    std::vector<std::string> disks_;
    std::optional<std::uint64_t> ios_at_start_;
};

}  // namespace iodiag::cli
