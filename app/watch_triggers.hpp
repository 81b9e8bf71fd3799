// When `iodiag watch` starts a full capture: a pure function over the cheap
// per-second samples (PSI, diskstats, vmstat deltas), so it is tested with
// fixture samples and no machine.
//
// Triggers (each sustained for a number of consecutive samples, so one slow
// second does not start a capture):
//   - I/O pressure: psi.io_some_pct >= psi_some_pct in every sample of the
//     last psi_for_s seconds;
//   - device latency: a device's read or write await (diskstats, per second,
//     only in seconds with at least min_iops completions in that direction)
//     above await_factor x its reference in every sample of the last
//     await_for_s seconds. The reference is, first found: the device's
//     nominal latency (site configuration, else the class reference of seed
//     000 §3.1 that the engine derives), else the device's own median await
//     over the samples watch keeps (its history), once history_min_samples
//     seconds with I/O in that direction have been seen.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

namespace iodiag::cli {

// One direction's figures of a device in one sample.
struct DirectionSample {
    double iops = 0;                      // completions per second
    std::optional<double> await_ms;       // absent when nothing completed
};

struct DeviceSample {
    DirectionSample read, write;
    double util_pct = 0;
};

struct WatchSample {
    double t_unix = 0;        // end of the sample's interval
    double interval_s = 1;
    std::optional<double> io_some_pct, io_full_pct, memory_some_pct;
    std::map<std::string, DeviceSample> devices;
    std::map<std::string, double> vm_per_s;   // vmstat counters' deltas per second (e.g. vm.pgmajfault)
};

// A device's nominal latency, with where it came from.
struct DeviceReference {
    std::optional<double> read_ms, write_ms;
    std::string source;   // provenance, e.g. "reference: seed 000 §3.1 ..." or "config: /etc/iodiag/iodiag.yaml:12"
};

struct TriggerConfig {
    double psi_some_pct = 20;     // I/O PSI some threshold, percent of the second
    double psi_for_s = 5;
    double await_factor = 10;     // seed 000 §9.4: 10x nominal is the alert level
    double await_for_s = 5;
    double min_iops = 10;         // fewer completions per second make an await too noisy to judge
    size_t history_min_samples = 60;
};

struct TriggerHit {
    std::string kind;        // "psi_io" or "device_await"
    std::string device;      // for device_await
    std::string direction;   // "read" / "write" for device_await
    double value = 0;        // the lowest value over the sustained stretch (psi pct, await ms)
    double threshold = 0;    // what it had to exceed
    std::string reference;   // what the threshold derives from
    std::string reason;      // one line for people
    size_t samples = 0;      // how many of the newest samples the stretch spans
};

// `samples`: oldest first, the newest last. Returns the first trigger that
// holds at the newest sample (I/O pressure first, then devices by name).
std::optional<TriggerHit> evaluate_triggers(const std::deque<WatchSample>& samples, const TriggerConfig& cfg,
                                            const std::map<std::string, DeviceReference>& references);

}  // namespace iodiag::cli
