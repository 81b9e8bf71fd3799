#include "app/start_lanes.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include <sched.h>

namespace iodiag::cli {

size_t usable_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
    return static_cast<size_t>(std::max(1, CPU_COUNT(&set)));
}

void start_slow_starters(const std::vector<std::unique_ptr<Collector>>& collectors,
                         const std::function<void(size_t)>& start_one, size_t lanes) {
    std::vector<size_t> cpu_bound, waiting;
    for (size_t i = 0; i < collectors.size(); ++i) {
        if (!collectors[i]->slow_to_start()) continue;
        (collectors[i]->start_cpu_weight() > 0 ? cpu_bound : waiting).push_back(i);
    }
    // A thread each for the starts that mostly wait; what one throws is kept
    // for the caller (escaping a thread's function would end the process).
    std::vector<std::exception_ptr> waiting_errors(waiting.size());
    std::vector<std::thread> threads;
    for (size_t k = 0; k < waiting.size(); ++k)
        threads.emplace_back([&, k] {
            try {
                start_one(waiting[k]);
            } catch (...) {
                waiting_errors[k] = std::current_exception();
            }
        });
    std::stable_sort(cpu_bound.begin(), cpu_bound.end(), [&](size_t a, size_t b) {
        return collectors[a]->start_cpu_weight() > collectors[b]->start_cpu_weight();
    });
    // The waiters joined whatever happens: a start that threw is rethrown
    // after, not with their threads still running.
    std::exception_ptr error;
    try {
        run_on_lanes(cpu_bound, start_one, lanes);
    } catch (...) {
        error = std::current_exception();
    }
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
    for (auto& e : waiting_errors)
        if (e) std::rethrow_exception(e);
}

void run_on_lanes(const std::vector<size_t>& items, const std::function<void(size_t)>& fn, size_t lanes) {
    std::vector<std::exception_ptr> errors(items.size());
    std::atomic<size_t> next{0};
    auto lane = [&] {
        for (size_t k; (k = next.fetch_add(1)) < items.size();) {
            try {
                fn(items[k]);
            } catch (...) {
                errors[k] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> helpers;
    for (size_t n = 1; n < std::min(items.size(), std::max<size_t>(lanes, 1)); ++n) helpers.emplace_back(lane);
    lane();
    for (auto& t : helpers) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

void start_fast_starters(const std::vector<std::unique_ptr<Collector>>& collectors,
                         const std::function<void(size_t)>& start_one, size_t lanes) {
    std::vector<size_t> fast;
    for (size_t i = 0; i < collectors.size(); ++i)
        if (!collectors[i]->slow_to_start()) fast.push_back(i);
    run_on_lanes(fast, start_one, lanes);
}

}  // namespace iodiag::cli
