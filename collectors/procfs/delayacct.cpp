#include "collectors/procfs/delayacct.hpp"

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "collectors/procfs/proc_pid_stat.hpp"
#include "collectors/procfs/proc_pids.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace fs = std::filesystem;

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- generic netlink, just enough for TASKSTATS ----

constexpr size_t kBuf = 8192;

struct NlRequest {
    nlmsghdr n;
    genlmsghdr g;
    char attrs[256];
};

void add_attr(NlRequest& r, uint16_t type, const void* data, uint16_t len) {
    auto* a = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(&r) + NLMSG_ALIGN(r.n.nlmsg_len));
    a->nla_type = type;
    a->nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
    std::memcpy(reinterpret_cast<char*>(a) + NLA_HDRLEN, data, len);
    r.n.nlmsg_len = NLMSG_ALIGN(r.n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

// Walks the attributes in [p, p+len) and calls fn(type, payload, payload_len).
// Headers are copied out (memcpy): the kernel's answer sits in a byte buffer
// with no alignment promise.
template <class Fn>
void for_each_attr(const char* p, int len, Fn fn) {
    while (len >= static_cast<int>(NLA_HDRLEN)) {
        nlattr a;
        std::memcpy(&a, p, sizeof a);
        if (a.nla_len < NLA_HDRLEN || a.nla_len > len) return;
        fn(a.nla_type & NLA_TYPE_MASK, p + NLA_HDRLEN, static_cast<int>(a.nla_len - NLA_HDRLEN));
        const int step = NLA_ALIGN(a.nla_len);
        if (step >= len) return;
        p += step;
        len -= step;
    }
}

// The generic-netlink attributes of the first message in [buf, buf+n), or
// false when it is no complete message (or an error message).
bool genl_attributes(const char* buf, int n, const char** attrs, int* alen, nlmsghdr* header) {
    if (n < static_cast<int>(NLMSG_LENGTH(GENL_HDRLEN))) return false;
    std::memcpy(header, buf, sizeof *header);
    if (header->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) || header->nlmsg_len > static_cast<unsigned>(n)) return false;
    *attrs = buf + NLMSG_LENGTH(GENL_HDRLEN);
    *alen = static_cast<int>(header->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
    return true;
}

class TaskstatsSource : public DelaySource {
public:
    static std::unique_ptr<TaskstatsSource> open(std::string* why) {
        auto s = std::unique_ptr<TaskstatsSource>(new TaskstatsSource);
        s->fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
        if (s->fd_ < 0) {
            *why = std::string("netlink socket: ") + std::strerror(errno);
            return nullptr;
        }
        timeval tv{1, 0};
        ::setsockopt(s->fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_nl local{};
        local.nl_family = AF_NETLINK;
        if (::bind(s->fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) < 0) {
            *why = std::string("netlink bind: ") + std::strerror(errno);
            return nullptr;
        }
        if (!s->resolve_family(why)) return nullptr;
        return s;
    }
    ~TaskstatsSource() override {
        if (fd_ >= 0) ::close(fd_);
    }

    std::optional<TaskDelays> read(int tgid) override {
        NlRequest r{};
        r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
        r.n.nlmsg_type = family_;
        r.n.nlmsg_flags = NLM_F_REQUEST;
        r.n.nlmsg_seq = ++seq_;
        r.g.cmd = TASKSTATS_CMD_GET;
        r.g.version = 1;
        const uint32_t id = static_cast<uint32_t>(tgid);
        add_attr(r, TASKSTATS_CMD_ATTR_TGID, &id, sizeof id);
        char buf[kBuf];
        const int n = transact(r, buf);
        if (n <= 0) return std::nullopt;
        auto out = decode_taskstats_reply(buf, static_cast<size_t>(n));
        // A TGID answer carries no command name (only per-thread answers do).
        if (out && out->comm.empty())
            out->comm = try_read_first_line("/proc/" + std::to_string(tgid) + "/comm").value_or("");
        return out;
    }

    std::string describe() const override { return "netlink taskstats (TASKSTATS_CMD_GET, TGID)"; }

private:
    TaskstatsSource() = default;

    int transact(NlRequest& r, char* buf) {
        sockaddr_nl kernel{};
        kernel.nl_family = AF_NETLINK;
        if (::sendto(fd_, &r, r.n.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
            return -1;
        return static_cast<int>(::recv(fd_, buf, kBuf, 0));
    }

    bool resolve_family(std::string* why) {
        NlRequest r{};
        r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
        r.n.nlmsg_type = GENL_ID_CTRL;
        r.n.nlmsg_flags = NLM_F_REQUEST;
        r.n.nlmsg_seq = ++seq_;
        r.g.cmd = CTRL_CMD_GETFAMILY;
        r.g.version = 1;
        add_attr(r, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
        char buf[kBuf];
        const int n = transact(r, buf);
        nlmsghdr h{};
        const char* attrs = nullptr;
        int alen = 0;
        if (n <= 0 || n < static_cast<int>(sizeof h)) {
            *why = "netlink: no answer resolving the TASKSTATS family";
            return false;
        }
        std::memcpy(&h, buf, sizeof h);
        if (h.nlmsg_type == NLMSG_ERROR && n >= static_cast<int>(NLMSG_LENGTH(sizeof(nlmsgerr)))) {
            nlmsgerr e{};
            std::memcpy(&e, buf + NLMSG_HDRLEN, sizeof e);
            *why = std::string("netlink: TASKSTATS family unknown (") + std::strerror(-e.error) +
                   "): kernel without CONFIG_TASKSTATS?";
            return false;
        }
        if (!genl_attributes(buf, n, &attrs, &alen, &h)) {
            *why = "netlink: no answer resolving the TASKSTATS family";
            return false;
        }
        for_each_attr(attrs, alen, [&](int type, const char* p, int len) {
            if (type == CTRL_ATTR_FAMILY_ID && len >= 2) std::memcpy(&family_, p, 2);
        });
        if (family_ == 0) *why = "netlink: TASKSTATS family id missing in the answer";
        return family_ != 0;
    }

    int fd_ = -1;
    uint16_t family_ = 0;
    uint32_t seq_ = 0;
};

class ProcStatSource : public DelaySource {
public:
    explicit ProcStatSource(std::string root) : root_(std::move(root)), hz_(::sysconf(_SC_CLK_TCK)) {
        if (hz_ <= 0) hz_ = 100;
    }
    std::optional<TaskDelays> read(int tgid) override {
        const std::string path = under_root(root_, "/proc/" + std::to_string(tgid) + "/stat");
        auto line = try_read_first_line(path);
        if (!line) return std::nullopt;
        try {
            TaskDelays d;
            d.comm = parse_stat_comm(*line);
            d.blkio_ns = parse_delayacct_blkio_ticks(*line, path) * (1000000000ULL / static_cast<uint64_t>(hz_));
            return d;
        } catch (const SourceError&) {
            return std::nullopt;
        }
    }
    std::string describe() const override {
        return under_root(root_, "/proc/<pid>/stat") + " field 42 (delayacct_blkio_ticks)";
    }

private:
    std::string root_;
    long hz_;
};

}  // namespace

std::optional<TaskDelays> decode_taskstats_reply(const char* buf, size_t size) {
    const int n = static_cast<int>(std::min<size_t>(size, kBuf));
    nlmsghdr h{};
    const char* attrs = nullptr;
    int alen = 0;
    if (!genl_attributes(buf, n, &attrs, &alen, &h) || h.nlmsg_type == NLMSG_ERROR) return std::nullopt;
    std::optional<TaskDelays> out;
    for_each_attr(attrs, alen, [&](int type, const char* p, int len) {
        if (type != TASKSTATS_TYPE_AGGR_TGID && type != TASKSTATS_TYPE_AGGR_PID) return;
        for_each_attr(p, len, [&](int t2, const char* q, int l2) {
            if (t2 != TASKSTATS_TYPE_STATS) return;
            // The kernel's struct only grows at the end: copy what both know.
            taskstats ts{};
            std::memcpy(&ts, q, std::min<size_t>(sizeof ts, static_cast<size_t>(l2)));
            TaskDelays d;
            d.detailed = true;
            d.comm = std::string(ts.ac_comm, strnlen(ts.ac_comm, sizeof ts.ac_comm));
            d.blkio_count = ts.blkio_count;
            d.blkio_ns = ts.blkio_delay_total;
            d.swapin_count = ts.swapin_count;
            d.swapin_ns = ts.swapin_delay_total;
            if (ts.version >= 6) {   // freepages since version 6
                d.freepages_count = ts.freepages_count;
                d.freepages_ns = ts.freepages_delay_total;
            }
            if (ts.version >= 9) {   // thrashing since version 9
                d.thrashing_count = ts.thrashing_count;
                d.thrashing_ns = ts.thrashing_delay_total;
            }
            out = d;
        });
    });
    return out;
}

std::unique_ptr<DelaySource> make_taskstats_source(std::string* why) { return TaskstatsSource::open(why); }
std::unique_ptr<DelaySource> make_proc_stat_source(const std::string& root) {
    return std::make_unique<ProcStatSource>(root);
}

std::string parse_stat_comm(const std::string& line) {
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return "";
    return line.substr(open + 1, close - open - 1);
}

uint64_t parse_delayacct_blkio_ticks(const std::string& line, const std::string& where) {
    return parse_stat_field(line, 42, "delayacct_blkio_ticks", where);
}

std::optional<double> max_plausible_delay_s(const std::string& root, int pid) {
    const std::string stat_path = under_root(root, "/proc/" + std::to_string(pid) + "/stat");
    const auto stat = try_read_first_line(stat_path);
    const auto uptime = try_read_first_line(under_root(root, "/proc/uptime"));
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (!stat || !uptime || hz <= 0) return std::nullopt;
    try {
        const uint64_t threads = parse_stat_field(*stat, 20, "num_threads", stat_path);
        const double started_s = double(parse_stat_field(*stat, 22, "starttime", stat_path)) / double(hz);
        const double age_s = std::stod(*uptime) - started_s;
        return double(std::max<uint64_t>(threads, 1)) * std::max(age_s, 0.0);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::vector<MetricSpec> DelayacctCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    const std::string S = layer::kSyscall, R = layer::kReclaim, P = layer::kPageCache;
    return {
        {"delayacct.blkio_delay_ms", K::Metric, "ms", S, "pid",
         "time the process's threads waited in io_schedule() in the window (summed over threads): "
         "page reads, tag waits, dirty throttling, writeback waits; not device time"},
        {"delayacct.blkio_delay_pct", K::Metric, "pct", S, "pid",
         "blkio delay / window length (threads add up: can exceed 100)"},
        {"delayacct.blkio_count", K::Metric, "count", S, "pid", "blkio waits in the window (taskstats only)"},
        {"delayacct.blkio_avg_us", K::Metric, "us", S, "pid", "average blkio wait (taskstats only)"},
        {"delayacct.freepages_delay_ms", K::Metric, "ms", R, "pid",
         "time spent in direct reclaim waiting for free pages (taskstats only)"},
        {"delayacct.thrashing_delay_ms", K::Metric, "ms", P, "pid",
         "time waiting on refaults of recently evicted working-set pages (taskstats only)"},
        {"delayacct.swapin_delay_ms", K::Metric, "ms", R, "pid", "time waiting for swap-in (taskstats only)"},
        {"delayacct.comm", K::Fact, "", "", "pid", "command name of the process"},
        {"delayacct.enabled", K::Fact, "", "", "",
         "kernel.task_delayacct as read at the start (\"1\" or \"0\")"},
        {"delayacct.source", K::Fact, "", "", "", "where the delays were read (taskstats or /proc stat)"},
        {"delayacct.implausible", K::Fact, "", "", "pid",
         "a process whose delays grew by more than its threads can have waited since it started: the "
         "kernel's accounting, not reported as delays"},
    };
}

CollectorStatus DelayacctCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    root_ = opts.root;
    pid_filter_ = opts.pid;
    const std::string sysctl = under_root(root_, "/proc/sys/kernel/task_delayacct");
    const auto value = try_read_first_line(sysctl);
    if (!value) {
        st.reason = sysctl + ": absent: this kernel has no task delay accounting (CONFIG_TASK_DELAY_ACCT)";
        return st;
    }
    if (*value != "1") {
        st.reason = "kernel.task_delayacct=" + *value +
                    " (task delay accounting is off; iodiag does not turn it on by itself). Turn it on with "
                    "`sysctl -w kernel.task_delayacct=1` (or boot with `delayacct`); only tasks started "
                    "afterwards are counted, so restart the workload before the next run";
        return st;
    }
    std::string why;
    if (factory_) {
        source_ = factory_(root_);
    } else if (root_ == "/") {
        source_ = make_taskstats_source(&why);
        if (!source_) source_ = make_proc_stat_source(root_);
    } else {
        source_ = make_proc_stat_source(root_);
    }
    before_ = snapshot();
    t0_ = now_s();
    st.available = true;
    st.reason = "tasks started before kernel.task_delayacct was turned on are not counted";
    if (!why.empty())
        st.reason += "; taskstats unavailable (" + why +
                     "): blkio delay only, from /proc/<pid>/stat (no reclaim / thrashing delays)";
    return st;
}

std::map<int, TaskDelays> DelayacctCollector::snapshot() {
    std::map<int, TaskDelays> out;
    if (!source_) return out;
    if (pid_filter_ > 0) {
        if (auto d = source_->read(pid_filter_)) out[pid_filter_] = *d;
        return out;
    }
    for (const int pid : numeric_entries(under_root(root_, "/proc")))
        if (auto d = source_->read(pid)) out[pid] = *d;
    return out;
}

void DelayacctCollector::finish(Evidence& ev) {
    const double window_s = std::max(1e-3, now_s() - t0_);
    const auto after = snapshot();
    const Provenance src{source_ && source_->describe().rfind("netlink", 0) == 0 ? "netlink" : "file",
                         source_ ? source_->describe() : ""};
    ev.add_fact("delayacct.enabled", {}, "1", {"sysctl", under_root(root_, "/proc/sys/kernel/task_delayacct")});
    ev.add_fact("delayacct.source", {}, src.source, src);

    struct Row {
        int pid;
        TaskDelays d;   // deltas
        uint64_t total_ns;
    };
    std::vector<Row> rows;
    auto grew = [](uint64_t b, uint64_t a) { return a >= b ? a - b : 0; };
    for (const auto& [pid, a] : after) {
        auto it = before_.find(pid);
        // A pid seen only at the end started during the window: all its delay is ours.
        const TaskDelays b = it == before_.end() ? TaskDelays{} : it->second;
        if (it != before_.end() && it->second.comm != a.comm) continue;   // pid reused
        TaskDelays d = a;
        d.blkio_count = grew(b.blkio_count, a.blkio_count);
        d.blkio_ns = grew(b.blkio_ns, a.blkio_ns);
        d.swapin_count = grew(b.swapin_count, a.swapin_count);
        d.swapin_ns = grew(b.swapin_ns, a.swapin_ns);
        d.freepages_count = grew(b.freepages_count, a.freepages_count);
        d.freepages_ns = grew(b.freepages_ns, a.freepages_ns);
        d.thrashing_count = grew(b.thrashing_count, a.thrashing_count);
        d.thrashing_ns = grew(b.thrashing_ns, a.thrashing_ns);
        const uint64_t total = d.blkio_ns + d.swapin_ns + d.freepages_ns + d.thrashing_ns;
        if (total == 0) continue;
        // Seen on Linux 6.18: a process whose delays grew by ~2x the uptime
        // in a few seconds, over a handful of counted waits (a wake-up
        // charged against a start time that was never set). No thread waits
        // longer than it has existed: such a sum is the kernel's accounting
        // error, said as such, never a wait.
        const auto bound_s = max_plausible_delay_s(root_, pid);
        // One second of slack: starttime counts in ticks and /proc/uptime in
        // hundredths, so a process a few ticks old has a bound of about zero.
        if (bound_s && total / 1e9 > *bound_s + 1.0) {
            ev.add_fact("delayacct.implausible", {{"pid", std::to_string(pid)}},
                        a.comm + ": " + std::to_string(total / 1000000) + " ms of delay in the window, more than its " +
                            "threads can have waited since it started (" +
                            std::to_string(static_cast<long long>(*bound_s * 1000)) +
                            " ms): the kernel's delay accounting is wrong for it; not reported",
                        src);
            continue;
        }
        rows.push_back({pid, d, total});
    }
    std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.total_ns > y.total_ns; });
    if (rows.size() > kTopProcesses) rows.resize(kTopProcesses);
    const Provenance delta{"derived", "difference of two reads of " + src.source};
    for (const auto& r : rows) {
        const Labels l{{"pid", std::to_string(r.pid)}};
        ev.add_fact("delayacct.comm", l, r.d.comm, src);
        ev.add_metric("delayacct.blkio_delay_ms", l, r.d.blkio_ns / 1e6, "ms", delta);
        ev.add_metric("delayacct.blkio_delay_pct", l, 100.0 * (r.d.blkio_ns / 1e9) / window_s, "pct", delta);
        if (!r.d.detailed) continue;
        ev.add_metric("delayacct.blkio_count", l, double(r.d.blkio_count), "count", delta);
        if (r.d.blkio_count > 0)
            ev.add_metric("delayacct.blkio_avg_us", l, r.d.blkio_ns / 1e3 / double(r.d.blkio_count), "us", delta);
        ev.add_metric("delayacct.freepages_delay_ms", l, r.d.freepages_ns / 1e6, "ms", delta);
        ev.add_metric("delayacct.thrashing_delay_ms", l, r.d.thrashing_ns / 1e6, "ms", delta);
        ev.add_metric("delayacct.swapin_delay_ms", l, r.d.swapin_ns / 1e6, "ms", delta);
    }
}

}  // namespace iodiag
