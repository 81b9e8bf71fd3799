#include "engine/derive/derived_metrics.hpp"

#include "engine/derive/derive_steps.hpp"
#include "engine/derive/slow_floor.hpp"
#include "engine/derive/ceph_attribution.hpp"

namespace iodiag {

std::vector<MetricSpec> derived_metric_specs() {
    std::vector<MetricSpec> specs = {
        {"window.duration_s", MetricSpec::Kind::Metric, "s", "", "", "length of the observation window"},
    };
    for (auto part : {derive::device_reference_specs, derive::device_judgement_specs,
                      derive::io_scheduler_part_specs, derive::device_submitter_specs, derive::device_stack_specs,
                      derive::cgroup_specs, derive::page_cache_specs, derive::sufferer_specs, derive::who_specs,
                      derive::fsync_chain_specs, derive::contention_specs, derive::device_throughput_specs, derive::readahead_setting_specs, derive::sync_writes_setting_specs, derive::ioprio_setting_specs, derive::request_size_setting_specs, derive::discard_setting_specs,
                      derive::dirty_limit_setting_specs, slow_floor_specs, derive::judgement_specs,
                      ceph_derived_metric_specs})
        for (auto& spec : part()) specs.push_back(std::move(spec));
    return specs;
}

void add_derived_metrics(Evidence& ev) {
    ev.add_metric("window.duration_s", {}, ev.window.duration_s, "s",
                  {"derived", "measured length of the observation window"});
    derive::add_effective_classes(ev);
    add_nominal_latencies(ev);
    add_ceph_derived_metrics(ev);   // after the device references it joins
    derive::add_sufferer_shares(ev);
    derive::add_device_judgement(ev);
    derive::add_submitter_whole_shares(ev);
    derive::add_cache_eviction(ev);
    derive::add_stack_chains(ev);
    derive::add_cgroup_join(ev);
    derive::add_limits_below(ev);
    derive::add_top_app(ev);
    derive::add_who(ev);
    derive::add_fsync_chain(ev);
    derive::add_contention(ev);
    derive::add_device_throughput(ev);
    derive::add_readahead_setting(ev);
    derive::add_sync_writes_setting(ev);
    derive::add_ioprio_setting(ev);
    derive::add_request_size_setting(ev);
    derive::add_discard_setting(ev);
    derive::add_dirty_limit_setting(ev);
    add_slow_floors(ev);
    derive::add_judgement(ev);
}

}  // namespace iodiag
