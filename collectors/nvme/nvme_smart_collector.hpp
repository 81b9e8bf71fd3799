// NVMe SMART / Health collector: for every controller under /sys/class/nvme it
// reads the SMART log at the start and at the end of the window (Get Log Page
// 02h through an AdminSource), Identify Controller for the thermal thresholds,
// model / serial / firmware from sysfs, and the hwmon temperature as a fallback
// when the admin command is refused. Every value is labelled with each namespace
// block device of the controller ({device: nvme0n1}) so rules can tie device
// health to the block metrics of the same device.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/nvme/nvme_smart_log.hpp"
#include "collectors/nvme/nvme_smart_source.hpp"

namespace iodiag {

class NvmeSmartCollector : public Collector {
public:
    // Makes the admin source for a root ("/" live, a fixture tree in tests).
    using SourceFactory = std::function<std::unique_ptr<nvme::AdminSource>(const std::string& root)>;

    NvmeSmartCollector();   // live: ioctl on <root>/dev/nvmeX
    explicit NvmeSmartCollector(SourceFactory factory);

    std::string name() const override { return "nvme_smart"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;

private:
    struct Controller {
        std::string name;                     // "nvme0"
        std::string sysfs_dir;
        std::vector<std::string> namespaces;  // block devices: "nvme0n1"
        std::optional<nvme::SmartLog> before;
        std::string error;                    // why SMART could not be read
    };
    void emit(const Controller& c, Evidence& ev);

    SourceFactory factory_;
    std::unique_ptr<nvme::AdminSource> source_;
    std::vector<Controller> controllers_;
    std::string root_;
};

}  // namespace iodiag
