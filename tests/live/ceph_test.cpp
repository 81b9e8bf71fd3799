// A real Ceph cluster on this host (tests/ceph/cluster.sh: one monitor, one
// manager, three BlueStore OSDs on loop devices, all in a temporary
// directory), a client write load, and three faults injected for real:
//   (a) one OSD's disk made slow (blkio write-IOPS limit under its loop device)
//       -> that OSD's disk is the top finding, the one finding about it (the
//          device rules' view of the cap folded in), with a share within 15
//          points of what its perf counters and the block tracer show, and the
//          other OSDs' replica waits are traced to it;
//   (b) the OSDs starved of CPU (a cgroup CPU quota) -> CPU / op queue, not the disk;
//   (c) healthy, after the faults are cleared and with the OSDs' heartbeat
//       round trips listed -> nothing above info (their replica waits, a large
//       share of their write latency, are the cost of replication).
// Then the cluster is torn down and nothing is left: no daemon, no loop
// device, no directory, nothing in /var/lib/ceph or /var/run/ceph.
//
// IODIAG_CEPH_SAVE_BUNDLES=DIR keeps each fault's bundle (how the replay
// fixtures tests/fixtures/bundles/ceph_*.json were recorded).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/live/live_support.hpp"

using namespace iodiag::live;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kIodiag = IODIAG_BINARY;
const std::string kCluster = std::string(IODIAG_SOURCE_DIR) + "/tests/ceph/cluster.sh";
constexpr int kOsds = 3;

std::string missing_ceph() {
    if (auto r = missing_root(); !r.empty()) return r;
    for (const char* t : {"ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "ceph-authtool", "monmaptool", "rados", "losetup"})
        if (auto r = missing_tool(t); !r.empty()) return r + " (packages ceph-mon ceph-mgr ceph-osd ceph-common)";
    if (!fs::exists("/sys/fs/cgroup/blkio") || !fs::exists("/sys/fs/cgroup/cpu"))
        return "needs the cgroup v1 blkio and cpu controllers (the faults use them)";
    return "";
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// An OSD's perf counters read over its admin socket back to back, until
// `dir`/stop exists, each into `dir`/<n>.json with the instant it was answered
// on its first line: a few lines of Python speaking the protocol of Ceph's own
// ceph_daemon.py (the command and a NUL; a big-endian length and the reply),
// independent of iodiag's client, and one process for the whole window. The
// ceph CLI spent most of each run starting Python, so its dumps were a
// quarter second apart and their instants uncertain by as much on a loaded
// machine, while the counters of a slow OSD move by a kv sync batch in that
// time.
void sample_perf_dumps(const std::string& asok, const std::string& dir) {
    static const std::string kSampler = R"PY(
import json, os, socket, struct, sys, time
path, out = sys.argv[1], sys.argv[2]
def dump():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    def get(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise OSError("closed")
            b += c
        return b
    t0 = time.time()
    s.sendall(json.dumps({"prefix": "perf dump"}).encode() + b"\0")
    body = get(struct.unpack(">I", get(4))[0])
    t1 = time.time()
    s.close()
    return (t0 + t1) / 2, body
n = 0
while not os.path.exists(os.path.join(out, "stop")):
    try:
        t, body = dump()
    except OSError:
        time.sleep(0.02)
        continue
    with open(os.path.join(out, "%06d.json" % n), "wb") as f:
        f.write(repr(t).encode() + b"\n" + body)
    n += 1
    time.sleep(0.01)
)PY";
    run_capture("python3 -c '" + kSampler + "' " + asok + " " + dir + " 2>/dev/null", nullptr);
}

struct PerfSample {
    double unix_s = 0;
    std::string path;
};
std::vector<PerfSample> perf_samples(const std::string& dir) {
    std::vector<PerfSample> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (e.path().extension() != ".json") continue;
        std::ifstream in(e.path());
        std::string first;
        if (std::getline(in, first) && !first.empty()) out.push_back({std::atof(first.c_str()), e.path().string()});
    }
    return out;
}
// Waits, up to 10 s, until the sampler has written more than `n` dumps.
void wait_for_dumps(const std::string& dir, size_t n) {
    for (int i = 0; i < 200 && perf_samples(dir).size() <= n; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
json perf_of(const PerfSample& s) {
    std::ifstream in(s.path);
    std::string first;
    std::getline(in, first);
    return json::parse(in, nullptr, false);
}

// The sampled OSD's perf dumps around iodiag's counter window: the last one
// at or before each edge and the first one at or after it.
struct PerfBracket {
    json outer_before, inner_before, inner_after, outer_after;
    double window_s = 0;   // iodiag's counter window
    double before_gap_s = 0, after_gap_s = 0;   // the outer pair's distance from the edges
};

// A counter's window, read from two dumps: its sum (seconds) and count.
struct CounterDelta {
    double sum_s = 0, count = 0;
};
CounterDelta counter_delta(const json& a, const json& b, const std::string& section, const std::string& key) {
    const json& x = a[section][key];
    const json& y = b[section][key];
    return {y["sum"].get<double>() - x["sum"].get<double>(), y["avgcount"].get<double>() - x["avgcount"].get<double>()};
}

// What can be said of a counter over iodiag's own window from dumps that
// bracket its edges: one pair inside it, one pair around it. Ceph's counters
// only grow, so the window's sum and count each lie between the inner pair's
// and the outer pair's, and its mean between the inner sum over the outer
// count and the outer sum over the inner count (ms). Dumps close to the edges
// make this tight; a gap in the dumps (the sampler or the OSD's admin socket
// waiting for a CPU while iodiag starts) widens it by what the gap may hold,
// where the nearest dump alone moved the mean by a whole kv sync batch (CI:
// 427 against iodiag's 531 ms from a dump 0.36 s before the window).
struct Bounds {
    double lo = 0, hi = 0;
};
Bounds window_mean_bounds(const PerfBracket& p, const std::string& section, const std::string& key) {
    const CounterDelta in = counter_delta(p.inner_before, p.inner_after, section, key);
    const CounterDelta out = counter_delta(p.outer_before, p.outer_after, section, key);
    if (out.count <= 0) return {0, 0};
    return {in.sum_s / out.count * 1000.0, out.sum_s / std::max(in.count, 1.0) * 1000.0};
}
Bounds window_sum_ms_bounds(const PerfBracket& p, const std::string& section, const std::string& key) {
    return {counter_delta(p.inner_before, p.inner_after, section, key).sum_s * 1000.0,
            counter_delta(p.outer_before, p.outer_after, section, key).sum_s * 1000.0};
}

double bundle_metric(const json& bundle, const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const auto& m : bundle["metrics"])
        if (m["name"] == name && m["labels"] == json(labels)) return m["value"].get<double>();
    return NAN;
}
std::string bundle_fact(const json& bundle, const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const auto& f : bundle["facts"])
        if (f["name"] == name && f["labels"] == json(labels)) return f["value"].get<std::string>();
    return "";
}

struct Recording {
    json verdict;
    json bundle;
    std::optional<PerfBracket> perf;   // the sampled OSD's, read beside iodiag around its counter window
    std::string disk;               // the disk under the cluster's backing files
    std::vector<double> disk_before, disk_after;   // its /proc/diskstats fields around the window
};

std::set<std::string> listing(const std::string& d) {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(d, ec)) out.insert(e.path().string());
    return out;
}

// The cluster, up for the life of the object; down on every exit path (and,
// should this process be killed, by the script's watchdog).
class Cluster {
public:
    Cluster() {
        // This process holds the machine lock (live_support): the script and
        // its watchdog must not wait for it again.
        ::setenv("IODIAG_LIVE_LOCK_HELD", "1", 1);
        ::setenv("IODIAG_CEPH_OWNER", std::to_string(::getpid()).c_str(), 1);
        char tmpl[] = "/tmp/iodiag-ceph-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        fs::remove(dir_);
        const auto t0 = std::chrono::steady_clock::now();
        ok_ = run_capture(kCluster + " up " + dir_ + " " + std::to_string(kOsds) + " 2>&1", &error_) == 0;
        std::printf("cluster up: %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        conf_ = dir_ + "/ceph.conf";
        keyring_ = dir_ + "/ceph.client.admin.keyring";
        run_ = dir_ + "/run";
    }
    ~Cluster() { down(); }
    void down() {
        if (down_) return;
        down_ = true;
        const auto t0 = std::chrono::steady_clock::now();
        run_capture(kCluster + " down " + dir_ + " 2>&1", nullptr);
        std::printf("cluster down: %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    bool ok() const { return ok_; }
    const std::string& error() const { return error_; }
    const std::string& dir() const { return dir_; }

    std::string osd_device(int id) const {
        std::ifstream in(dir_ + "/osd" + std::to_string(id) + ".dev");
        std::string dev;
        in >> dev;
        return dev.substr(dev.rfind('/') + 1);
    }

    // Fault on, client writes, iodiag records a window, fault off. The machine
    // is shared: when the disk under the cluster's backing files was itself
    // slow in the window (someone else's I/O, the host's own storage), the
    // window shows that and not the injected fault, so it is recorded once
    // more. `sampled_osd`: that OSD's perf counters are read
    // (sample_perf_dumps) all through, for the dumps nearest its counter
    // window's edges.
    Recording record(const std::string& name, const std::string& fault, int sampled_osd = -1) const {
        Recording r = record_once(name, fault, sampled_osd);
        if (const std::string why = backing_disk_slow(r); !why.empty()) {
            std::printf("%s: recorded again, %s\n", name.c_str(), why.c_str());
            r = record_once(name, fault, sampled_osd);
        }
        if (const char* keep = std::getenv("IODIAG_CEPH_SAVE_BUNDLES"))
            fs::copy_file(dir_ + "/" + name + ".json", std::string(keep) + "/ceph_" + name + ".json",
                          fs::copy_options::overwrite_existing);
        return r;
    }

private:
    // The disk under the backing files, from /proc/diskstats around the window
    // (read here, not by iodiag): await of each direction with I/O, in ms.
    std::string backing_disk() const {
        std::string out;
        run_capture("lsblk -no PKNAME \"$(findmnt -no SOURCE -T " + dir_ + ")\" 2>/dev/null", &out);
        out = trim(out);
        if (out.empty()) run_capture("basename \"$(findmnt -no SOURCE -T " + dir_ + ")\"", &out);
        return trim(out);
    }
    static std::vector<double> diskstats(const std::string& disk) {
        std::ifstream in("/proc/diskstats");
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string major, minor, name;
            f >> major >> minor >> name;
            if (name != disk) continue;
            std::vector<double> v;
            double x;
            while (f >> x) v.push_back(x);
            return v;   // reads, merged, sectors, ms reading, writes, merged, sectors, ms writing, ...
        }
        return {};
    }
    std::string backing_disk_slow(const Recording& r) const {
        const auto& a = r.disk_before;
        const auto& b = r.disk_after;
        if (a.size() < 8 || b.size() < 8) return "";
        for (const auto& [ios, ms, dir] : {std::tuple{0, 3, "read"}, std::tuple{4, 7, "write"}}) {
            const double n = b[ios] - a[ios];
            // Seed 004 §3.1's alert level for an OSD disk.
            if (n > 0 && (b[ms] - a[ms]) / n > 50)
                return "the disk under the cluster (" + r.disk + ") was itself slow: " + dir + " await " +
                       std::to_string(int((b[ms] - a[ms]) / n)) + " ms";
        }
        return "";
    }
    Recording record_once(const std::string& name, const std::string& fault, int sampled_osd) const {
        Recording r;
        std::string out;
        if (!fault.empty()) {
            EXPECT_EQ(run_capture(kCluster + " fault " + dir_ + " " + fault + " 2>&1", &out), 0) << out;
        }
        std::string load;
        run_capture(kCluster + " load " + dir_ + " 40 16 4096", &load);
        load = trim(load);
        // Let the fault reach a steady state (queues fill, the kv sync slows).
        std::this_thread::sleep_for(std::chrono::seconds(4));
        r.disk = backing_disk();
        r.disk_before = diskstats(r.disk);
        // A fresh directory each time: a recording made again must not find
        // the first one's stop file (its sampler would stop at once) or dumps.
        const std::string samples_dir = dir_ + "/perf-" + name;
        fs::remove_all(samples_dir);
        fs::create_directories(samples_dir);
        std::thread sampler([&] {
            if (sampled_osd >= 0) sample_perf_dumps(run_ + "/ceph-osd." + std::to_string(sampled_osd) + ".asok", samples_dir);
        });
        // iodiag starts only once the sampler has answered: a window whose
        // start has no dump before it cannot be bracketed (Python's start-up
        // on a busy machine put the first dump half a second into it).
        if (sampled_osd >= 0) wait_for_dumps(samples_dir, 0);
        const std::string bundle = dir_ + "/" + name + ".json";
        const std::string env = "IODIAG_CEPH_RUN_DIR=" + run_ + " CEPH_CONF=" + conf_ + " CEPH_KEYRING=" + keyring_ + " ";
        out.clear();
        EXPECT_EQ(run_capture(env + kIodiag + " record --duration 6 -o " + bundle + " --format json 2>/dev/null", &out), 0);
        // ... and the sampler stops only once it has answered again: a dump
        // begun after iodiag exited lies after its counter window's end.
        if (sampled_osd >= 0) wait_for_dumps(samples_dir, perf_samples(samples_dir).size() + 1);
        std::ofstream(samples_dir + "/stop").put('\n');
        sampler.join();
        const std::vector<PerfSample> samples = perf_samples(samples_dir);
        r.disk_after = diskstats(r.disk);
        r.verdict = json::parse(out, nullptr, false);
        if (!load.empty()) run_capture("kill " + load + " 2>/dev/null", nullptr);
        if (!fault.empty()) run_capture(kCluster + " fault " + dir_ + " clear 2>&1", nullptr);
        std::ifstream in(bundle);
        r.bundle = json::parse(in, nullptr, false);
        if (r.bundle.is_object() && samples.size() >= 2) {
            // The edges of the OSD's own counter window (iodiag's perf dumps),
            // which are not exactly the bundle's: the dumps are answered while
            // the other collectors start and finish.
            const std::map<std::string, std::string> osd{{"osd", "osd." + std::to_string(sampled_osd)}};
            const double start = bundle_metric(r.bundle, "ceph.osd.counters_start_unix", osd);
            const double end = start + bundle_metric(r.bundle, "ceph.osd.counters_window_s", osd);
            EXPECT_FALSE(std::isnan(end)) << "no counter window of osd." << sampled_osd << " in the bundle";
            // The dumps answered last before, and first after, each edge.
            std::vector<PerfSample> by_time = samples;
            std::sort(by_time.begin(), by_time.end(), [](const auto& x, const auto& y) { return x.unix_s < y.unix_s; });
            auto around = [&](double t) -> std::pair<const PerfSample*, const PerfSample*> {
                auto next = std::lower_bound(by_time.begin(), by_time.end(), t,
                                             [](const PerfSample& x, double v) { return x.unix_s < v; });
                if (next == by_time.begin() || next == by_time.end()) return {nullptr, nullptr};
                return {&*std::prev(next), &*next};
            };
            const auto [a0, a1] = around(start);
            const auto [b0, b1] = around(end);
            EXPECT_TRUE(a0 && b0) << "the perf dumps of osd." << sampled_osd << " do not bracket its counter window ("
                                  << by_time.front().unix_s - start << " s to " << by_time.back().unix_s - end
                                  << " s from its edges)";
            if (!std::isnan(end) && a0 && b0 && a1->unix_s < b0->unix_s) {
                PerfBracket p;
                p.outer_before = perf_of(*a0);
                p.inner_before = perf_of(*a1);
                p.inner_after = perf_of(*b0);
                p.outer_after = perf_of(*b1);
                p.window_s = end - start;
                p.before_gap_s = start - a0->unix_s;
                p.after_gap_s = b1->unix_s - end;
                r.perf = std::move(p);
                std::printf("%s: perf dumps of osd.%d %.2f/%.2f s around its counter window's start, %.2f/%.2f s "
                            "around its end (%zu dumps)\n", name.c_str(), sampled_osd, start - a0->unix_s,
                            a1->unix_s - start, end - b0->unix_s, b1->unix_s - end, samples.size());
            }
        }
        // Let a slow OSD drain its backlog before the next fault.
        std::this_thread::sleep_for(std::chrono::seconds(3));
        return r;
    }

    std::string dir_, conf_, keyring_, run_, error_;
    bool ok_ = false, down_ = false;
};

std::string summary(const json& v) {
    std::string s;
    for (const auto& f : v["findings"])
        s += "  " + f["severity"].get<std::string>() + " " + f["rule_id"].get<std::string>() + " " +
             f["instance"].get<std::string>() + " share " + (f["share_pct"].is_null() ? "-" : f["share_pct"].dump()) +
             ": " + f["title"].get<std::string>() + "\n";
    return s;
}

void check_slow_osd_disk(const Cluster& cluster) {
    const int slow = 1;
    const std::string device = cluster.osd_device(slow);
    // Writes of the slow OSD's loop worker to the disk under its backing file:
    // 40 per second, far below what BlueStore's WAL, data and flushes need.
    const Recording r = cluster.record("slow_osd_disk", "slow-disk " + std::to_string(slow) + " 40", slow);
    ASSERT_TRUE(r.verdict.is_object());
    ASSERT_TRUE(r.bundle.is_object());
    SCOPED_TRACE(summary(r.verdict));
    ASSERT_FALSE(r.verdict["findings"].empty());
    // The fault is made with a blkio write-IOPS cap on the disk under the OSD's
    // loop device: one slow disk, so one finding, the top one: the Ceph view
    // naming the OSD and its device, with the device rules' finding about the
    // cap under it (cgroup.limit_below_stacked_device on the loop device)
    // folded in as the mechanism, and no finding of its own left on the device.
    const json& top = r.verdict["findings"][0];
    const std::string osd = "osd." + std::to_string(slow);
    ASSERT_EQ(top["rule_id"], "ceph.osd_disk_slow");
    ASSERT_EQ(top["instance"], osd);
    const json* disk_slow = &top;
    EXPECT_NE(top["title"].get<std::string>().find(device), std::string::npos) << top["title"];
    // The cap is named when the cgroup rule finds it exhausted (its limit used
    // 90 % or more in the window: when the loop worker itself waits for a CPU
    // on this busy machine it may issue less than the cap allows, and the
    // device rules then see a saturated loop1 instead); either way what they
    // say about loop1 is folded in, and nothing is left on the device.
    bool cap_folded = false;
    for (const auto& g : top["folded"]) cap_folded |= g == "cgroup.limit_below_stacked_device@" + device;
    bool cites_cap = false;
    for (const auto& e : top["evidence"]) cites_cap |= e["name"] == "device.lower_limit_setting";
    EXPECT_EQ(cites_cap, cap_folded) << "the cap under " << device << " folded but not cited, or the reverse";
    std::printf("slow OSD disk: the blkio cap under %s %s (folded: %s)\n", device.c_str(),
                cap_folded ? "named as the mechanism" : "not found exhausted by the cgroup rule", top["folded"].dump().c_str());
    for (const auto& f : r.verdict["findings"]) EXPECT_NE(f["instance"], device) << f["rule_id"] << " left on " << device;
    ASSERT_FALSE((*disk_slow)["share_pct"].is_null());
    const double share = (*disk_slow)["share_pct"].get<double>();

    // What the OSD's own perf counters (read beside iodiag around the
    // window, sample_perf_dumps) and the block tracer (the bundle's Q2C/D2C of its device) show:
    // the transaction's wait for the kv sync pipeline and its data writes, the
    // block layer's share of the kv sync thread's time, the device's share of
    // the block time, over the client write latency.
    ASSERT_TRUE(r.perf.has_value()) << "no perf dumps of osd." << slow << " around its counter window";
    const PerfBracket& p = *r.perf;
    const Bounds w = window_mean_bounds(p, "osd", "op_w_latency");
    const Bounds kv_queued = window_mean_bounds(p, "bluestore", "state_kv_queued_lat");
    const Bounds kv_committing = window_mean_bounds(p, "bluestore", "state_kv_commiting_lat");
    const Bounds kv{kv_queued.lo + kv_committing.lo, kv_queued.hi + kv_committing.hi};
    const Bounds aio = window_mean_bounds(p, "bluestore", "state_aio_wait_lat");
    const Bounds kv_busy = window_sum_ms_bounds(p, "bluestore", "kv_sync_lat");
    double q2c = 0, d2c = 0;
    for (const char* op : {"write", "flush"}) {
        const double q = bundle_metric(r.bundle, "block.q2c_total_us", {{"device", device}, {"op", op}});
        const double d = bundle_metric(r.bundle, "block.d2c_total_us", {{"device", device}, {"op", op}});
        if (!std::isnan(q)) q2c += q / 1000.0, d2c += d / 1000.0;
    }
    ASSERT_GT(q2c, 0) << "the block tracer saw no writes on " << device;
    ASSERT_GT(w.lo, 0);
    // Per second of each one's own window: the bundle's and the counters'
    // differ. The share grows with the kv and aio waits and the block layer's
    // part of the kv sync thread's time, and falls with the write latency:
    // its bounds take each figure at the matching end of its own.
    // The kv sync thread's time on a CPU or waiting for one (its schedstat,
    // in the bundle) is not block time either: on a busy machine (CI builds
    // beside the cluster on two cores) it bounds the block part below the
    // block layer's own total.
    const double bundle_s = r.bundle["window"]["duration_s"].get<double>();
    const double block_per_s = q2c / bundle_s;
    const double kv_cpu = bundle_metric(r.bundle, "ceph.osd.kv_sync_thread_cpu_ms", {{"osd", "osd." + std::to_string(slow)}});
    const double kv_cpu_per_s = std::isnan(kv_cpu) ? 0.0 : kv_cpu / bundle_s;
    // The parts of a write are means of different counters: the commit
    // latency also counts the transactions of writes this OSD only holds a
    // replica of, so the parts may add up to more than the client write
    // latency. iodiag then scales them to their sum (op queue + commit +
    // replica wait = max(w, w - process + prepare + commit)), and so does
    // this expectation.
    const Bounds commit = window_mean_bounds(p, "bluestore", "commit_lat");
    const Bounds process = window_mean_bounds(p, "osd", "op_w_process_latency");
    const Bounds prepare = window_mean_bounds(p, "osd", "op_w_prepare_latency");
    auto share_of = [&](double aio_ms, double kv_ms, double kv_busy_ms, double w_ms, double not_queued_ms, double commit_ms) {
        const double kv_busy_per_s = kv_busy_ms / p.window_s;
        const double f_blk = std::min({1.0, block_per_s / kv_busy_per_s, std::max(0.0, 1.0 - kv_cpu_per_s / kv_busy_per_s)});
        const double io = std::min(commit_ms, aio_ms + kv_ms * f_blk);
        const double parts_ms = std::max(w_ms, w_ms - std::max(0.0, not_queued_ms) + commit_ms);
        return std::min(100.0, 100.0 * io * (d2c / q2c) / parts_ms);
    };
    // The block part falls with the kv sync time through the block bound and
    // rises with it through the CPU bound, and the commit both caps the block
    // time and adds to the parts' sum: both ends of each are tried. The sum is
    // largest with the least of the process time outside prepare.
    double expected_lo = 100.0, expected_hi = 0.0;
    for (double kv_busy_ms : {kv_busy.lo, kv_busy.hi})
        for (double commit_ms : {commit.lo, commit.hi}) {
            expected_lo = std::min(expected_lo, share_of(aio.lo, kv.lo, kv_busy_ms, w.hi, process.lo - prepare.hi, commit_ms));
            expected_hi = std::max(expected_hi, share_of(aio.hi, kv.hi, kv_busy_ms, w.lo, process.hi - prepare.lo, commit_ms));
        }
    std::printf("slow OSD disk: finding share %.1f %%, from the perf counters and the block tracer %.1f-%.1f %% "
                "(write latency %.1f-%.1f ms, commit %.1f-%.1f ms, kv wait %.1f-%.1f ms, D2C/Q2C %.2f, kv sync thread on "
                "or waiting for a CPU %.0f ms/s; dumps %.2f s before and %.2f s after the window)\n", share, expected_lo,
                expected_hi, w.lo, w.hi, commit.lo, commit.hi, kv.lo, kv.hi, d2c / q2c, kv_cpu_per_s, p.before_gap_s, p.after_gap_s);
    {
        // iodiag's own figures for the same window, to tell a counter from a
        // formula when the two disagree.
        const std::map<std::string, std::string> l{{"osd", osd}};
        std::printf("slow OSD disk: iodiag's window: writes %.0f at %.1f ms, reads %.0f at %.1f ms, commit %.1f ms, "
                    "aio %.1f ms, kv queued %.1f + committing %.1f ms, kv sync busy %.0f ms\n",
                    bundle_metric(r.bundle, "ceph.osd.client_write_ops", l),
                    bundle_metric(r.bundle, "ceph.osd.client_write_latency_ms", l),
                    bundle_metric(r.bundle, "ceph.osd.client_read_ops", l),
                    bundle_metric(r.bundle, "ceph.osd.client_read_latency_ms", l),
                    bundle_metric(r.bundle, "ceph.bluestore.commit_ms", l),
                    bundle_metric(r.bundle, "ceph.bluestore.state_aio_wait_ms", l),
                    bundle_metric(r.bundle, "ceph.bluestore.state_kv_queued_ms", l),
                    bundle_metric(r.bundle, "ceph.bluestore.state_kv_committing_ms", l),
                    bundle_metric(r.bundle, "ceph.bluestore.kv_sync_total_ms", l));
        std::printf("slow OSD disk: the independent reads' windows: %.0f-%.0f writes, aio %.1f-%.1f ms\n",
                    counter_delta(p.inner_before, p.inner_after, "osd", "op_w_latency").count,
                    counter_delta(p.outer_before, p.outer_after, "osd", "op_w_latency").count, aio.lo, aio.hi);
    }
    // Beyond the counters' bounds, 15 points for what the two sides read
    // differently: the block figures' window is the bundle's, not the
    // counters', and D2C/Q2C is the whole window's, not each write's.
    EXPECT_GE(share, expected_lo - 15.0);
    EXPECT_LE(share, expected_hi + 15.0);

    // The other OSDs wait for it as their replica: each one's replica-wait
    // finding names it as the slowest peer.
    std::set<std::string> traced;
    for (const auto& f : r.verdict["findings"]) {
        if (f["rule_id"] != "ceph.replica_wait_dominated") continue;
        std::string peer;
        for (const auto& e : f["evidence"])
            if (e["name"] == "ceph.osd.slowest_peer") peer = e["value"].get<std::string>();
        std::printf("%s: replica wait %.1f %% of its client op time, slowest peer %s\n",
                    f["instance"].get<std::string>().c_str(), f["share_pct"].get<double>(), peer.c_str());
        EXPECT_EQ(peer, "osd." + std::to_string(slow)) << f["instance"];
        if (peer == "osd." + std::to_string(slow)) traced.insert(f["instance"].get<std::string>());
    }
    for (int i = 0; i < kOsds; ++i)
        if (i != slow) {
            EXPECT_TRUE(traced.count("osd." + std::to_string(i))) << "osd." << i << "'s replica wait not traced";
        }
}

void check_cpu_starved(const Cluster& cluster) {
    // Every OSD in one cpu cgroup with a quota of a fifth of one CPU.
    const Recording r = cluster.record("cpu_starved", "cpu-starve 20");
    ASSERT_TRUE(r.verdict.is_object());
    SCOPED_TRACE(summary(r.verdict));
    ASSERT_FALSE(r.verdict["findings"].empty());
    const json& top = r.verdict["findings"][0];
    EXPECT_TRUE(top["layer"] == "cpu" || top["layer"] == "osd_op") << top["rule_id"];
    // Nothing blames the storage. The three OSDs, the monitor and their logs
    // share this machine's one disk (each OSD's loop device is a file on it,
    // with direct I/O): an OSD's flush through its loop device waits there
    // behind its siblings' requests and the flusher's, a wait of this rig
    // that a healthy run shows too (19.6 % of an OSD's slow time lost to
    // them, under the 25 % bar; one run of four in CI crossed it here, 36.7 %,
    // the flusher named). Where it crosses the bar it is named as contention,
    // below the starvation, and printed; a finding that blames a device
    // (slow, saturated, stalling) fails.
    for (const auto& f : r.verdict["findings"]) {
        EXPECT_NE(f["rule_id"], "ceph.osd_disk_slow");
        const std::string rule = f["rule_id"];
        if (f["layer"] == "device" && rule.rfind("contention.", 0) == 0 && &f != &top) {
            std::printf("CPU-starved cluster, the shared disk: %s %.1f %% %s\n", rule.c_str(),
                        f["share_pct"].get<double>(), f["title"].get<std::string>().c_str());
            continue;
        }
        EXPECT_NE(f["layer"], "device") << f["rule_id"];
    }
}

void check_healthy(const Cluster& cluster) {
    // An OSD lists its heartbeat round trips only after about a minute up:
    // wait for them (the ceph CLI, independent of iodiag), so the window has
    // the network figures as a long-running cluster would.
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
        bool all = true;
        for (int i = 0; i < kOsds && all; ++i) {
            std::string out;
            run_capture("ceph -c " + cluster.dir() + "/ceph.conf daemon " + cluster.dir() + "/run/ceph-osd." +
                            std::to_string(i) + ".asok dump_osd_network 0 2>/dev/null", &out);
            const json j = json::parse(out, nullptr, false);
            all = j.is_object() && j.contains("entries") && !j["entries"].empty();
        }
        if (all) break;
        std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    std::printf("heartbeat round trips listed after %.0f s more\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const Recording r = cluster.record("healthy", "");
    ASSERT_TRUE(r.verdict.is_object());
    SCOPED_TRACE(summary(r.verdict));
    // Nothing is said against the storage. Waiting for a CPU may be: three
    // OSDs and a monitor share this machine's cores (with CI's builds beside
    // them), and a run-queue delay that holds much of a thread's slow time is
    // a warning since issue 22; it is printed, not failed.
    for (const auto& f : r.verdict["findings"]) {
        if (f["layer"] == "cpu") {
            std::printf("healthy cluster, CPU: %s %s %s\n", f["severity"].get<std::string>().c_str(),
                        f["rule_id"].get<std::string>().c_str(), f["title"].get<std::string>().c_str());
            continue;
        }
        EXPECT_EQ(f["severity"], "info") << f["rule_id"];
    }
    // The Ceph layers were observed, not skipped.
    for (const auto& row : r.verdict["layers"])
        if (row["layer"] == "bluestore" || row["layer"] == "osd_op" || row["layer"] == "replication") {
            EXPECT_NE(row["state"], "not observed") << row["layer"];
        }
    // The cluster's facts came from the monitors (the client keyring is readable).
    EXPECT_EQ(bundle_fact(r.bundle, "ceph.cluster.health", {}), "HEALTH_OK");
    // The OSDs have been up for over a minute: their heartbeat round trips
    // are listed (dump_osd_network 0), and on localhost they explain nothing.
    for (int i = 0; i < kOsds; ++i) {
        const std::string osd = "osd." + std::to_string(i);
        for (int j = 0; j < kOsds; ++j)
            if (j != i) {
                const double ms = bundle_metric(r.bundle, "ceph.osd.peer_ping_ms", {{"osd", osd}, {"peer", "osd." + std::to_string(j)}});
                EXPECT_FALSE(std::isnan(ms)) << "no heartbeat round trip from " << osd << " to osd." << j;
                if (!std::isnan(ms)) std::printf("heartbeat round trip %s -> osd.%d: %.3f ms\n", osd.c_str(), j, ms);
            }
    }
}

}  // namespace

TEST(LiveCeph, ThreeFaultsOnARealClusterThenNothingIsLeft) {
    if (auto why = missing_ceph(); !why.empty()) GTEST_SKIP() << why;
    const auto var_lib_before = listing("/var/lib/ceph");
    const auto var_run_before = listing("/var/run/ceph");
    const auto t0 = std::chrono::steady_clock::now();
    std::string dir;
    {
        Cluster cluster;
        dir = cluster.dir();
        ASSERT_TRUE(cluster.ok()) << cluster.error();
        // Healthy last: the faults are cleared by then (the harder case for
        // staying quiet), and the OSDs have been up long enough (a minute)
        // to list their heartbeat round trips.
        {
            SCOPED_TRACE("fault (a): one OSD's disk slow");
            check_slow_osd_disk(cluster);
        }
        {
            SCOPED_TRACE("fault (b): OSDs starved of CPU");
            check_cpu_starved(cluster);
        }
        {
            SCOPED_TRACE("fault (c): healthy");
            check_healthy(cluster);
        }
        cluster.down();
    }
    std::printf("the whole Ceph test: %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::string out;
    run_capture("losetup -a", &out);
    EXPECT_EQ(out.find(dir), std::string::npos) << out;
    out.clear();
    run_capture("ps -eo args", &out);
    EXPECT_EQ(out.find(dir), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir));
    EXPECT_EQ(listing("/var/lib/ceph"), var_lib_before);
    EXPECT_EQ(listing("/var/run/ceph"), var_run_before);
    out.clear();
    run_capture("ls /sys/fs/cgroup/blkio /sys/fs/cgroup/cpu", &out);
    EXPECT_EQ(out.find("iodiag-ceph"), std::string::npos) << out;
}

// A cluster whose watchdog died with it (SIGKILL of the whole session, a
// restart of every process) leaves its directory, loop devices and fault
// cgroups; the next `up` (here `reap`, what `up` runs first) recognises them
// by the script's own names and removes them, and nothing else: another loop
// device, a recorded PID that is no longer the cluster's daemon.
TEST(LiveCeph, LeftoversOfAClusterKilledWithItsWatchdogAreReaped) {
    if (auto why = missing_ceph(); !why.empty()) GTEST_SKIP() << why;
    ::setenv("IODIAG_LIVE_LOCK_HELD", "1", 1);
    char t1[] = "/tmp/iodiag-ceph-XXXXXX", t2[] = "/tmp/iodiag-ceph-XXXXXX", other[] = "/tmp/iodiag-reapXXXXXX";
    const std::string left = ::mkdtemp(t1), gone = ::mkdtemp(t2), elsewhere = ::mkdtemp(other);
    std::string out, dev_left, dev_gone, dev_other;
    auto attach = [&](const std::string& file, std::string* dev) {
        ASSERT_EQ(run_capture("truncate -s 16M " + file + " && losetup -f --show " + file, &out), 0) << out;
        *dev = trim(out);
        out.clear();
    };
    fs::create_directories(left + "/backing");
    fs::create_directories(left + "/pids");
    fs::create_directories(gone + "/backing");
    attach(left + "/backing/osd0.img", &dev_left);
    attach(gone + "/backing/osd1.img", &dev_gone);
    attach(elsewhere + "/osd0.img", &dev_other);
    // As `up` wrote them; the watchdog's and the daemon's PIDs since reused by
    // a process that is not the cluster's (this test).
    std::ofstream(left + "/undo") << "detach_loop " << dev_left << " " << left << "/backing/osd0.img\n";
    std::ofstream(left + "/watchdog.pid") << ::getpid() << "\n";
    std::ofstream(left + "/pids/osd.0") << ::getpid() << "\n";
    fs::remove_all(gone);   // its directory removed, its loop device still attached
    const std::string cg = "/sys/fs/cgroup/cpu/iodiag-ceph-" + std::to_string(::getpid()) + "-cpu";
    fs::create_directory(cg);

    EXPECT_EQ(run_capture(kCluster + " reap 2>&1", &out), 0) << out;
    std::printf("%s", out.c_str());
    out.clear();
    run_capture("losetup -nl -O NAME,BACK-FILE", &out);
    EXPECT_EQ(out.find(left), std::string::npos) << out;
    EXPECT_EQ(out.find(gone), std::string::npos) << out;
    EXPECT_NE(out.find(elsewhere), std::string::npos) << "a loop device that is not the cluster's was detached\n" << out;
    EXPECT_FALSE(fs::exists(left));
    EXPECT_FALSE(fs::exists(cg));
    run_capture("losetup -d " + dev_other, nullptr);
    fs::remove_all(elsewhere);
    if (fs::exists(cg)) fs::remove(cg);
    // Left attached only if reap failed (detaching a number reused since would hit another's device).
    if (out.find(left) != std::string::npos) run_capture("losetup -d " + dev_left, nullptr);
    if (out.find(gone) != std::string::npos) run_capture("losetup -d " + dev_gone, nullptr);
    fs::remove_all(left);
}
