// Hand-built evidence with per-interval series for the heatmap and report
// tests (and a counting helper for the rendered pages): a device whose D2C jumps from ~128 us to ~8 ms at interval 5, and a
// dirty layer that takes over the syscall time from interval 5 on.
#pragma once

#include <string>

#include "engine/evidence/evidence.hpp"

namespace iodiag::testing {

// How many times `what` occurs in `text` (elements of a rendered page).
inline size_t count_of(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

inline Log2Histogram hist_at(int bucket, uint64_t count) {
    Log2Histogram h;
    h.add_bucket(bucket, count);
    return h;
}

// 10 intervals of 1 s; the fault starts at interval 5.
inline Evidence series_evidence(const std::string& device = "vda") {
    Evidence ev;
    ev.host = "testhost";
    ev.kernel = "6.18.0";
    ev.window = {1'780'000'000, 9.5};
    ev.series.start_unix = ev.window.start_unix;
    ev.series.interval_s = 1;
    ev.series.count = 10;
    ev.collectors.push_back({"block_bpf", true, "", {"device", "block_queue"}});
    ev.collectors.push_back({"syscall_bpf", true, "", {"syscall", "dirty"}});
    const Provenance tp{"tracepoint", "tracepoint:block:block_rq_complete"};
    HistogramSeries d2c{"block.d2c_us", {{"device", device}}, "us", {}, tp};
    HistogramSeries d2c_write{"block.d2c_us", {{"device", device}, {"op", "write"}}, "us", {}, tp};
    HistogramSeries idle{"block.d2c_us", {{"device", "sdz"}}, "us", {}, tp};
    HistogramSeries write{"syscall.latency_us", {{"op", "write"}}, "us", {}, {"tracepoint", "raw_syscalls"}};
    HistogramSeries read{"syscall.latency_us", {{"op", "read"}}, "us", {}, {"tracepoint", "raw_syscalls"}};
    ValueSeries dirty{"layer.time_us", {{"layer", "dirty"}}, "us", {}, {"derived", "test"}};
    ValueSeries cpu{"layer.time_us", {{"layer", "cpu"}}, "us", {}, {"derived", "test"}};
    ValueSeries psi{"psi.io_some_pct", {}, "pct", {}, {"derived", "test"}};
    ValueSeries zero{"vmstat.allocstall", {}, "count", {}, {"derived", "test"}};
    for (int i = 0; i < 10; ++i) {
        const bool fault = i >= 5;
        Log2Histogram h = hist_at(fault ? 13 : 7, fault ? 40 : 900);
        if (i == 3) h.add_bucket(9, 1);   // a lone slower I/O: must stay visible
        d2c.intervals.push_back(h);
        d2c_write.intervals.push_back(h);
        idle.intervals.push_back({});
        write.intervals.push_back(hist_at(fault ? 14 : 3, 500));
        read.intervals.push_back(i == 2 ? Log2Histogram{} : hist_at(2, 50));   // an empty interval
        dirty.intervals.push_back(fault ? 900'000 : 10'000);
        cpu.intervals.push_back(fault ? 100'000 : 90'000);
        psi.intervals.push_back(fault ? 80 : 2);
        zero.intervals.push_back(0);
    }
    ev.series.histograms = {d2c, d2c_write, idle, write, read};
    ev.series.values = {dirty, cpu, psi, zero};
    return ev;
}

}  // namespace iodiag::testing
