#include "app/watch_triggers.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

namespace iodiag::cli {

namespace {

// How many of the newest samples make up the last `for_s` seconds; 0 when the
// samples do not reach that far back yet.
size_t sustained_count(const std::deque<WatchSample>& samples, double for_s) {
    double covered = 0;
    for (size_t n = 1; n <= samples.size(); ++n) {
        covered += samples[samples.size() - n].interval_s;
        if (covered >= for_s - 1e-6) return n;
    }
    return 0;
}

// True when each of the newest n samples has a value >= `at_least` (or >
// `at_least` when `strict`); `lowest` gets the smallest value seen over them.
bool holds_for_last(const std::deque<WatchSample>& samples, size_t n,
                    const std::function<std::optional<double>(const WatchSample&)>& value, double at_least,
                    bool strict, double* lowest) {
    if (n == 0) return false;
    double low = 0;
    for (size_t i = samples.size() - n; i < samples.size(); ++i) {
        const auto v = value(samples[i]);
        if (!v || *v < at_least || (strict && *v == at_least)) return false;
        low = i == samples.size() - n ? *v : std::min(low, *v);
    }
    *lowest = low;
    return true;
}

const DirectionSample* direction(const WatchSample& s, const std::string& device, bool read) {
    auto it = s.devices.find(device);
    if (it == s.devices.end()) return nullptr;
    return read ? &it->second.read : &it->second.write;
}

std::optional<double> judged_await(const WatchSample& s, const std::string& device, bool read, double min_iops) {
    const DirectionSample* d = direction(s, device, read);
    if (!d || !d->await_ms || d->iops < min_iops) return std::nullopt;
    return d->await_ms;
}

// The device's own normal: the median await of the samples before the
// stretch being judged.
std::optional<double> history_median(const std::deque<WatchSample>& samples, size_t exclude_newest,
                                     const std::string& device, bool read, const TriggerConfig& cfg) {
    std::vector<double> awaits;
    for (size_t i = 0; i + exclude_newest < samples.size(); ++i)
        if (auto a = judged_await(samples[i], device, read, cfg.min_iops)) awaits.push_back(*a);
    if (awaits.size() < std::max<size_t>(cfg.history_min_samples, 1)) return std::nullopt;
    std::nth_element(awaits.begin(), awaits.begin() + awaits.size() / 2, awaits.end());
    return awaits[awaits.size() / 2];
}

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

}  // namespace

std::optional<TriggerHit> evaluate_triggers(const std::deque<WatchSample>& samples, const TriggerConfig& cfg,
                                            const std::map<std::string, DeviceReference>& references) {
    if (samples.empty()) return std::nullopt;

    const size_t psi_n = sustained_count(samples, cfg.psi_for_s);
    double low = 0;
    if (holds_for_last(samples, psi_n, [](const WatchSample& s) { return s.io_some_pct; },
                       cfg.psi_some_pct, false, &low)) {
        TriggerHit h;
        h.kind = "psi_io";
        h.value = low;
        h.threshold = cfg.psi_some_pct;
        h.reference = "--psi-some";
        h.samples = psi_n;
        h.reason = "I/O pressure (some) >= " + fmt(cfg.psi_some_pct) + " % in each of the last " +
                   std::to_string(psi_n) + " samples (lowest " + fmt(low) + " %, /proc/pressure/io)";
        return h;
    }

    const size_t await_n = sustained_count(samples, cfg.await_for_s);
    if (await_n == 0) return std::nullopt;
    for (const auto& entry : samples.back().devices) {
        const std::string& device = entry.first;   // not a binding: clang < 16 cannot capture one
        for (const bool read : {true, false}) {
            const char* dir = read ? "read" : "write";
            std::optional<double> ref;
            std::string ref_source;
            if (auto r = references.find(device); r != references.end()) {
                ref = read ? r->second.read_ms : r->second.write_ms;
                ref_source = "nominal " + std::string(dir) + " latency " + (ref ? fmt(*ref) + " ms" : "") + " (" +
                             r->second.source + ")";
            }
            if (!ref) {
                ref = history_median(samples, await_n, device, read, cfg);
                if (ref) ref_source = "its own median " + std::string(dir) + " await " + fmt(*ref) + " ms over the last " +
                                      std::to_string(samples.size() - await_n) + " s (history)";
            }
            if (!ref || *ref <= 0) continue;
            const double threshold = cfg.await_factor * *ref;
            if (!holds_for_last(samples, await_n,
                                [&, read = read](const WatchSample& s) {
                                    return judged_await(s, device, read, cfg.min_iops);
                                },
                                threshold, true, &low))
                continue;
            TriggerHit h;
            h.kind = "device_await";
            h.device = device;
            h.direction = dir;
            h.value = low;
            h.threshold = threshold;
            h.reference = ref_source;
            h.samples = await_n;
            h.reason = device + " " + dir + " await > " + fmt(cfg.await_factor) + " x " + ref_source + " = " +
                       fmt(threshold) + " ms in each of the last " + std::to_string(await_n) +
                       " samples (lowest " + fmt(low) + " ms, /proc/diskstats)";
            return h;
        }
    }
    return std::nullopt;
}

}  // namespace iodiag::cli
