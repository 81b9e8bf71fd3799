#include "collectors/nvme/nvme_smart_collector.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace fs = std::filesystem;

namespace {

const char* kSysClassNvme = "/sys/class/nvme";

// Namespace directories inside a controller's sysfs directory. "nvme0n1" is the
// block device itself; with native multipath the controller holds "nvme0c1n1"
// (subsystem 0, controller 1, namespace 1) and the block device is "nvme0n1".
std::vector<std::string> namespaces_of(const std::string& ctrl_dir) {
    static const std::regex plain("^nvme[0-9]+n[0-9]+$");
    static const std::regex multipath("^nvme([0-9]+)c[0-9]+n([0-9]+)$");
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ctrl_dir, ec)) {
        const std::string n = e.path().filename().string();
        std::smatch m;
        if (std::regex_match(n, plain))
            out.push_back(n);
        else if (std::regex_match(n, m, multipath))
            out.push_back("nvme" + m[1].str() + "n" + m[2].str());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

// hwmon directories of a controller: <ctrl>/hwmonN (older kernels) or
// <ctrl>/device/hwmon/hwmonN.
std::optional<std::string> hwmon_dir(const std::string& ctrl_dir) {
    for (const std::string& base : {ctrl_dir, ctrl_dir + "/device/hwmon"}) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(base, ec)) {
            const std::string n = e.path().filename().string();
            if (n.rfind("hwmon", 0) == 0 && fs::exists(e.path() / "temp1_input"))
                return e.path().string();
        }
    }
    return std::nullopt;
}

std::optional<double> read_millidegrees(const std::string& path) {
    auto line = try_read_first_line(path);
    if (!line || line->empty()) return std::nullopt;
    try {
        return static_cast<double>(parse_i64(*line, path)) / 1000.0;
    } catch (const SourceError&) {
        return std::nullopt;
    }
}

std::string trimmed(std::optional<std::string> s) {
    if (!s) return "";
    auto b = s->find_first_not_of(" \t\n");
    auto e = s->find_last_not_of(" \t\n");
    return b == std::string::npos ? "" : s->substr(b, e - b + 1);
}

}  // namespace

NvmeSmartCollector::NvmeSmartCollector()
    : NvmeSmartCollector([](const std::string& root) {
          return nvme::make_ioctl_admin_source(under_root(root, "/dev"));
      }) {}

NvmeSmartCollector::NvmeSmartCollector(SourceFactory factory) : factory_(std::move(factory)) {}

std::vector<MetricSpec> NvmeSmartCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    const std::string L = layer::kDevice;
    std::vector<MetricSpec> s{
        {"nvme.critical_warning", K::Metric, "bitmask", L, "device",
         "SMART Critical Warning byte (nvme-cli critical_warning); 0 = no warning"},
        {"nvme.temperature", K::Metric, "K", L, "device",
         "composite temperature in Kelvin, as nvme-cli's JSON reports it"},
        {"nvme.temperature_c", K::Metric, "degC", L, "device", "composite temperature"},
        {"nvme.avail_spare", K::Metric, "pct", L, "device", "available spare capacity"},
        {"nvme.spare_thresh", K::Metric, "pct", L, "device",
         "available spare threshold: below it the controller raises a critical warning"},
        {"nvme.spare_margin_pct", K::Metric, "pct", L, "device",
         "avail_spare - spare_thresh (negative: spare below threshold)"},
        {"nvme.percent_used", K::Metric, "pct", L, "device",
         "vendor estimate of the rated endurance used (may exceed 100)"},
        {"nvme.endurance_grp_critical_warning_summary", K::Metric, "bitmask", L, "device",
         "nvme-cli \"endurance grp critical warning summary\""},
        {"nvme.data_read_bytes", K::Metric, "bytes", L, "device",
         "data_units_read x 512000 bytes"},
        {"nvme.data_written_bytes", K::Metric, "bytes", L, "device",
         "data_units_written x 512000 bytes"},
        {"nvme.warning_temp_time", K::Metric, "min", L, "device",
         "minutes the composite temperature was above the warning threshold (WCTEMP)"},
        {"nvme.critical_comp_time", K::Metric, "min", L, "device",
         "minutes the composite temperature was above the critical threshold (CCTEMP)"},
        {"nvme.thm_temp1_trans_count", K::Metric, "count", L, "device",
         "transitions into thermal management state 1 (light throttling)"},
        {"nvme.thm_temp2_trans_count", K::Metric, "count", L, "device",
         "transitions into thermal management state 2 (heavy throttling)"},
        {"nvme.thm_temp1_total_time", K::Metric, "s", L, "device",
         "seconds in thermal management state 1"},
        {"nvme.thm_temp2_total_time", K::Metric, "s", L, "device",
         "seconds in thermal management state 2"},
        {"nvme.warning_temp_threshold_c", K::Metric, "degC", L, "device",
         "warning composite temperature threshold (Identify Controller WCTEMP, or hwmon temp1_max)"},
        {"nvme.critical_temp_threshold_c", K::Metric, "degC", L, "device",
         "critical composite temperature threshold (Identify CCTEMP, or hwmon temp1_crit)"},
        {"nvme.temperature_headroom_c", K::Metric, "degC", L, "device",
         "warning threshold - composite temperature"},
        {"nvme.hwmon_temperature_c", K::Metric, "degC", L, "device",
         "composite temperature from hwmon (fallback when the admin command is refused)"},
        {"nvme.media_errors_delta", K::Metric, "count", L, "device",
         "media_errors added during the window"},
        {"nvme.num_err_log_entries_delta", K::Metric, "count", L, "device",
         "error log entries added during the window"},
        {"nvme.unsafe_shutdowns_delta", K::Metric, "count", L, "device",
         "unsafe_shutdowns added during the window"},
        {"nvme.controller", K::Fact, "", L, "device", "controller of the namespace, e.g. nvme0"},
        {"nvme.model", K::Fact, "", L, "device", "model number (sysfs)"},
        {"nvme.serial", K::Fact, "", L, "device", "serial number (sysfs)"},
        {"nvme.firmware", K::Fact, "", L, "device", "firmware revision (sysfs)"},
        {"nvme.critical_warning_names", K::Fact, "", L, "device",
         "names of the Critical Warning bits set, comma separated, or \"none\""},
        {"nvme.temperature_threshold_source", K::Fact, "", L, "device",
         "where the warning temperature threshold came from, or \"unknown\""},
        {"nvme.smart_error", K::Fact, "", L, "device",
         "why the SMART log could not be read or decoded"},
    };
    for (const auto& b : nvme::critical_warning_bits())
        s.push_back({std::string("nvme.critical_warning.") + b.name, K::Metric, "bool", L, "device",
                     std::string("Critical Warning bit ") + std::to_string(b.bit) + ": " +
                         b.description});
    for (const auto& c : nvme::smart_counters()) {
        s.push_back({std::string("nvme.") + c.name, K::Metric, c.unit, L, "device",
                     std::string(c.description) + " (as double; exact value in the fact)"});
        s.push_back({std::string("nvme.") + c.name + ".exact", K::Fact, "", L, "device",
                     std::string(c.description) + ", exact 128-bit decimal"});
    }
    for (int i = 1; i <= 8; ++i)
        s.push_back({"nvme.temperature_sensor_" + std::to_string(i) + "_c", K::Metric, "degC", L,
                     "device", "temperature sensor " + std::to_string(i) + " (when implemented)"});
    return s;
}

CollectorStatus NvmeSmartCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    root_ = opts.root;
    controllers_.clear();
    const std::string cls = under_root(root_, kSysClassNvme);
    std::error_code ec;
    if (!fs::is_directory(cls, ec)) {
        st.reason = cls + ": no NVMe controllers (directory absent)";
        return st;
    }
    static const std::regex ctrl_re("^nvme[0-9]+$");
    for (const auto& e : fs::directory_iterator(cls, ec)) {
        const std::string n = e.path().filename().string();
        if (!std::regex_match(n, ctrl_re)) continue;
        Controller c{n, e.path().string(), namespaces_of(e.path().string()), std::nullopt, ""};
        if (!opts.devices.empty()) {
            bool wanted = std::find(opts.devices.begin(), opts.devices.end(), n) != opts.devices.end();
            for (const auto& ns : c.namespaces)
                wanted = wanted ||
                         std::find(opts.devices.begin(), opts.devices.end(), ns) != opts.devices.end();
            if (!wanted) continue;
        }
        controllers_.push_back(std::move(c));
    }
    std::sort(controllers_.begin(), controllers_.end(),
              [](const Controller& a, const Controller& b) { return a.name < b.name; });
    if (controllers_.empty()) {
        st.reason = cls + ": no NVMe controller" +
                    (opts.devices.empty() ? std::string() : " among the selected devices");
        return st;
    }
    source_ = factory_(root_);
    std::vector<std::string> problems;
    bool any_source = false;
    for (auto& c : controllers_) {
        try {
            c.before = nvme::decode_smart_log(source_->smart_log(c.name), c.name);
            any_source = true;
        } catch (const std::exception& e) {
            c.error = e.what();
            if (hwmon_dir(c.sysfs_dir)) any_source = true;
            problems.push_back(c.error + (hwmon_dir(c.sysfs_dir) ? " (hwmon temperature only)" : ""));
        }
    }
    st.available = any_source;
    for (const auto& p : problems) st.reason += (st.reason.empty() ? "" : "; ") + p;
    if (!st.available && st.reason.empty()) st.reason = "no SMART source";
    return st;
}

void NvmeSmartCollector::finish(Evidence& ev) {
    for (const auto& c : controllers_) emit(c, ev);
}

void NvmeSmartCollector::emit(const Controller& c, Evidence& ev) {
    const Provenance sysfs{"file", c.sysfs_dir};
    std::vector<std::string> devices = c.namespaces;
    if (devices.empty()) devices.push_back(c.name);

    std::optional<nvme::SmartLog> after;
    std::string error = c.error;
    Provenance smart_src{"ioctl", source_ ? source_->describe(c.name, "Get Log Page 02h") : ""};
    if (c.before && source_) {
        try {
            after = nvme::decode_smart_log(source_->smart_log(c.name), c.name);
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    if (smart_src.source.rfind("file", 0) == 0) smart_src.kind = "file";

    std::optional<nvme::ThermalThresholds> thresholds;
    std::string threshold_source = "unknown";
    Provenance threshold_prov{"ioctl", source_ ? source_->describe(c.name, "Identify Controller") : ""};
    if (threshold_prov.source.rfind("file", 0) == 0) threshold_prov.kind = "file";
    if (after) {
        try {
            auto id = source_->identify_controller(c.name);
            thresholds = nvme::decode_identify_thresholds(id.data(), id.size(), c.name);
            if (thresholds->warning_k) threshold_source = "Identify Controller WCTEMP";
        } catch (const std::exception&) {
            thresholds.reset();   // fall back to hwmon below
        }
    }
    const auto hwmon = hwmon_dir(c.sysfs_dir);
    std::optional<double> warn_c, crit_c;
    if (thresholds && thresholds->warning_k) warn_c = *thresholds->warning_k - 273.0;
    if (thresholds && thresholds->critical_k) crit_c = *thresholds->critical_k - 273.0;
    Provenance hw_prov{"file", hwmon ? *hwmon : ""};
    if (!warn_c && hwmon) {
        warn_c = read_millidegrees(*hwmon + "/temp1_max");
        if (warn_c) {
            threshold_source = "hwmon " + *hwmon + "/temp1_max";
            threshold_prov = {"file", *hwmon + "/temp1_max"};
        }
    }
    if (!crit_c && hwmon) crit_c = read_millidegrees(*hwmon + "/temp1_crit");

    for (const auto& dev : devices) {
        const Labels l{{"device", dev}};
        ev.add_fact("nvme.controller", l, c.name, sysfs);
        ev.add_fact("nvme.model", l, trimmed(try_read_text_file(c.sysfs_dir + "/model")),
                    {"file", c.sysfs_dir + "/model"});
        ev.add_fact("nvme.serial", l, trimmed(try_read_text_file(c.sysfs_dir + "/serial")),
                    {"file", c.sysfs_dir + "/serial"});
        ev.add_fact("nvme.firmware", l, trimmed(try_read_text_file(c.sysfs_dir + "/firmware_rev")),
                    {"file", c.sysfs_dir + "/firmware_rev"});
        ev.add_fact("nvme.temperature_threshold_source", l, threshold_source, threshold_prov);
        if (!error.empty()) ev.add_fact("nvme.smart_error", l, error, smart_src);
        if (hwmon) {
            if (auto t = read_millidegrees(*hwmon + "/temp1_input"))
                ev.add_metric("nvme.hwmon_temperature_c", l, *t, "degC",
                              {"file", *hwmon + "/temp1_input"});
        }
        if (warn_c) ev.add_metric("nvme.warning_temp_threshold_c", l, *warn_c, "degC", threshold_prov);
        if (crit_c) ev.add_metric("nvme.critical_temp_threshold_c", l, *crit_c, "degC", threshold_prov);
        if (!after) {
            if (warn_c && hwmon)
                if (auto t = read_millidegrees(*hwmon + "/temp1_input"))
                    ev.add_metric("nvme.temperature_headroom_c", l, *warn_c - *t, "degC",
                                  {"derived", "warning threshold - hwmon temp1_input"});
            continue;
        }
        const nvme::SmartLog& s = *after;
        ev.add_metric("nvme.critical_warning", l, s.critical_warning, "bitmask", smart_src);
        for (const auto& b : nvme::critical_warning_bits())
            ev.add_metric(std::string("nvme.critical_warning.") + b.name, l,
                          (s.critical_warning >> b.bit) & 1, "bool", smart_src);
        const std::string names = nvme::critical_warning_names(s.critical_warning);
        ev.add_fact("nvme.critical_warning_names", l, names.empty() ? "none" : names, smart_src);
        ev.add_metric("nvme.temperature", l, s.temperature_k, "K", smart_src);
        ev.add_metric("nvme.temperature_c", l, s.temperature_c(), "degC", smart_src);
        if (warn_c)
            ev.add_metric("nvme.temperature_headroom_c", l, *warn_c - s.temperature_c(), "degC",
                          {"derived", "warning threshold (" + threshold_source +
                                          ") - SMART composite temperature"});
        ev.add_metric("nvme.avail_spare", l, s.avail_spare, "pct", smart_src);
        ev.add_metric("nvme.spare_thresh", l, s.spare_thresh, "pct", smart_src);
        ev.add_metric("nvme.spare_margin_pct", l,
                      static_cast<double>(s.avail_spare) - static_cast<double>(s.spare_thresh), "pct",
                      {"derived", "avail_spare - spare_thresh from " + smart_src.source});
        ev.add_metric("nvme.percent_used", l, s.percent_used, "pct", smart_src);
        ev.add_metric("nvme.endurance_grp_critical_warning_summary", l,
                      s.endurance_grp_critical_warning_summary, "bitmask", smart_src);
        for (const auto& k : nvme::smart_counters()) {
            const nvme::u128 v = s.*(k.field);
            ev.add_metric(std::string("nvme.") + k.name, l, nvme::to_double(v), k.unit, smart_src);
            ev.add_fact(std::string("nvme.") + k.name + ".exact", l, nvme::to_decimal(v), smart_src);
        }
        ev.add_metric("nvme.data_read_bytes", l,
                      nvme::to_double(nvme::data_units_to_bytes(s.data_units_read)), "bytes", smart_src);
        ev.add_metric("nvme.data_written_bytes", l,
                      nvme::to_double(nvme::data_units_to_bytes(s.data_units_written)), "bytes",
                      smart_src);
        ev.add_metric("nvme.warning_temp_time", l, s.warning_temp_time, "min", smart_src);
        ev.add_metric("nvme.critical_comp_time", l, s.critical_comp_time, "min", smart_src);
        for (std::size_t i = 0; i < s.temperature_sensor_k.size(); ++i)
            if (s.temperature_sensor_k[i] != 0)
                ev.add_metric("nvme.temperature_sensor_" + std::to_string(i + 1) + "_c", l,
                              s.temperature_sensor_k[i] - 273.0, "degC", smart_src);
        ev.add_metric("nvme.thm_temp1_trans_count", l, s.thm_temp1_trans_count, "count", smart_src);
        ev.add_metric("nvme.thm_temp2_trans_count", l, s.thm_temp2_trans_count, "count", smart_src);
        ev.add_metric("nvme.thm_temp1_total_time", l, s.thm_temp1_total_time, "s", smart_src);
        ev.add_metric("nvme.thm_temp2_total_time", l, s.thm_temp2_total_time, "s", smart_src);
        const nvme::SmartLog& b = *c.before;
        auto delta = [&](nvme::u128 before, nvme::u128 now) {
            return now >= before ? nvme::to_double(now - before) : 0.0;   // counters never go back
        };
        const Provenance dp{"derived", "difference of two SMART reads: " + smart_src.source};
        ev.add_metric("nvme.media_errors_delta", l, delta(b.media_errors, s.media_errors), "count", dp);
        ev.add_metric("nvme.num_err_log_entries_delta", l,
                      delta(b.num_err_log_entries, s.num_err_log_entries), "count", dp);
        ev.add_metric("nvme.unsafe_shutdowns_delta", l, delta(b.unsafe_shutdowns, s.unsafe_shutdowns),
                      "count", dp);
    }
}

}  // namespace iodiag
