// CONFIG_HZ from a kernel config, and jiffies / now from /proc/timer_list.
#include "collectors/procfs/kernel_hz.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(kernel_hz) {
    using namespace iodiag;
    const std::string text = fuzz::text(data, size);
    if (auto hz = parse_config_hz(text); hz && *hz <= 0) fuzz::fail("CONFIG_HZ <= 0 accepted");
    parse_timer_list(text);
}
