// The NVMe SMART / Health log page (first 512 bytes) and Identify Controller's
// thermal thresholds (the rest): decoded exactly or rejected naming the byte.
#include <algorithm>

#include "collectors/nvme/nvme_smart_log.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(nvme_smart_log) {
    using namespace iodiag;
    const size_t page = std::min(size, nvme::kSmartLogSize);
    fuzz::rejects_with<nvme::SmartDecodeError>("nvme0", [&] {
        const nvme::SmartLog log = nvme::decode_smart_log(data, page, "nvme0");
        for (const auto& c : nvme::smart_counters()) {
            nvme::to_decimal(log.*(c.field));
            nvme::to_double(log.*(c.field));
            nvme::data_units_to_bytes(log.*(c.field));
        }
        nvme::critical_warning_names(log.critical_warning);
    });
    fuzz::rejects_with<nvme::SmartDecodeError>("nvme0", [&] {
        nvme::decode_identify_thresholds(data + page, size - page, "nvme0");
    });
}
