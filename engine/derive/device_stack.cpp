// Stacked devices (loop backing files, dm/md members) walked top to bottom.
#include "engine/derive/derive_steps.hpp"

#include "engine/evidence/format.hpp"

namespace iodiag::derive {

// A stacked device's chain, top to bottom: "loop1 -> /mnt/f on loop0 (D2C p99
// 3.1 ms) -> /x/disk.img (no block device)". Each hop's figures are measured;
// the chain says where the upper device's time was spent.
void add_stack_chains(Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        std::string lower = lower_device(ev, d);
        const Fact* file = ev.find_fact("device.backing_file", l);
        if (lower.empty() && !file) continue;
        std::string chain = d;
        std::string cur = d, bottom = d;
        std::set<std::string> seen{d};
        for (int hop = 0; hop < 8; ++hop) {
            const Labels cl{{"device", cur}};
            const Fact* f = ev.find_fact("device.backing_file", cl);
            std::string next = lower_device(ev, cur);
            if (next.empty() && !f) break;
            chain += " -> ";
            if (f) chain += "file " + f->value + (next.empty() ? " (on no block device the kernel can see into)" : " on ");
            if (next.empty() || seen.count(next)) break;
            seen.insert(next);
            chain += next;
            const Labels nl{{"device", next}};
            if (const Metric* p = ev.find_metric("block.d2c_p99_us", nl))
                chain += " (D2C p99 " + format_value(p->value, p->unit) + ")";
            bottom = next;
            cur = next;
        }
        ev.add_fact("device.stack_chain", l, chain,
                    derived("walked down loop backing files (loop/backing_file, stat st_dev) and dm/md members "
                            "(/sys/block/*/slaves)"));
        if (bottom != d) ev.add_fact("device.bottom_device", l, bottom, derived("last block device of device.stack_chain"));
    }
}

std::vector<MetricSpec> device_stack_specs() {
    using K = MetricSpec::Kind;
    return {
        {"device.stack_chain", K::Fact, "", layer::kDevice, "device",
         "the devices and backing files under a stacked device, top to bottom"},
        {"device.bottom_device", K::Fact, "", layer::kDevice, "device", "last block device under a stacked device"},
    };
}

}  // namespace iodiag::derive
