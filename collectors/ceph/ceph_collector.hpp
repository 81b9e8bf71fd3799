// The Ceph collector: every local OSD through its admin socket (perf
// counters, op tracker, configuration), the OSD's threads' CPU, its devices
// (so the block collectors' figures for them can be joined to it), and the
// cluster's health from the monitors when a client keyring is readable.
//
// On a host without OSD admin sockets it says "not a Ceph node" and is left
// out of the evidence altogether (applicable() == false): one failed opendir,
// no output. Each socket has its own deadline and all are asked at once, so a
// hung OSD costs one timeout and the others are still observed; an OSD whose
// socket refuses, times out or answers something unparseable is "not
// observed" with the reason.
#pragma once

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/ceph/ceph_cluster_status.hpp"
#include "collectors/ceph/ceph_osd_snapshot.hpp"
#include "collectors/collector.hpp"

namespace iodiag {

struct CephCollectorOptions {
    // Directory of the admin sockets; "" = $IODIAG_CEPH_RUN_DIR, else
    // /var/run/ceph under CollectOptions::root.
    std::string run_dir;
    int socket_timeout_ms = 2000;
    bool query_cluster = true;   // ask the monitors (librados) when a keyring is readable
};

class CephCollector : public Collector {
public:
    explicit CephCollector(CephCollectorOptions opts = {});
    ~CephCollector() override;
    std::string name() const override { return "ceph"; }
    std::vector<MetricSpec> metric_specs() const override { return ceph_metric_specs(); }
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;
    bool applicable() const override { return applicable_; }

private:
    struct Osd {
        OsdSocket sock;
        OsdConfig config;
        OsdSnapshot before;
        std::string error;   // not observed, and why
    };
    OsdSnapshot snapshot(const Osd& osd, bool with_ops) const;

    CephCollectorOptions opts_;
    std::string root_ = "/";
    bool applicable_ = true;
    std::vector<Osd> osds_;
    double window_start_unix_ = 0;
    std::future<ClusterStatusParse> cluster_;
};

}  // namespace iodiag
