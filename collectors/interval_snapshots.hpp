// The per-interval series of the procfs snapshot collectors (psi, vmstat,
// diskstats): a cumulative snapshot at the window's start and one at the end
// of each interval (Collector::sample), each with its monotonic time. Interval
// i is the difference between snapshot i and snapshot i-1, over the time that
// really passed between the two reads (the last interval is shorter, and a
// sample can come late on a loaded machine), so no count falls between two
// intervals and no rate is computed over a nominal length.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace iodiag {

template <class Snapshot>
class IntervalSnapshots {
public:
    // The snapshot the first interval starts from (taken in start()).
    void begin(Snapshot first) { begin_at(std::chrono::steady_clock::now(), std::move(first)); }
    void begin_at(std::chrono::steady_clock::time_point at, Snapshot first) {
        taken_.clear();
        taken_.push_back({at, std::move(first)});
        failure_.clear();
    }
    // The snapshot at the end of the next interval; nullopt when it could not
    // be read (`why` says why). One missed snapshot makes two intervals
    // unknown, and a series has no "unknown" value: the series is dropped
    // (complete() is false) rather than filled with a guess.
    void take(std::optional<Snapshot> s, const std::string& why = "") {
        take_at(std::chrono::steady_clock::now(), std::move(s), why);
    }
    // With an explicit time (tests).
    void take_at(std::chrono::steady_clock::time_point at, std::optional<Snapshot> s, const std::string& why = "") {
        if (!s && failure_.empty()) failure_ = why.empty() ? "a sample could not be read" : why;
        taken_.push_back({at, std::move(s)});
    }
    bool started() const { return !taken_.empty(); }
    // Number of intervals sampled so far.
    size_t intervals() const { return taken_.empty() ? 0 : taken_.size() - 1; }
    bool complete() const { return started() && failure_.empty(); }
    // Why the series is incomplete ("" when complete).
    const std::string& failure() const { return failure_; }

    // f(before, after, seconds, interval index) for each interval, in order.
    // Only call when complete().
    template <class F>
    void for_each_interval(F&& f) const {
        for (size_t i = 1; i < taken_.size(); ++i) {
            const double s = std::chrono::duration<double>(taken_[i].at - taken_[i - 1].at).count();
            f(*taken_[i - 1].snapshot, *taken_[i].snapshot, s, i - 1);
        }
    }

private:
    struct Taken {
        std::chrono::steady_clock::time_point at;
        std::optional<Snapshot> snapshot;
    };
    std::vector<Taken> taken_;
    std::string failure_;
};

}  // namespace iodiag
