// A TASKSTATS_CMD_GET answer from generic netlink, as the delay-accounting
// collector receives it from the kernel.
#include <cstring>
#include <vector>

#include "collectors/procfs/delayacct.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(taskstats) {
    // A copy of exactly `size` bytes, so that AddressSanitizer sees any read past the answer.
    std::vector<char> buf(data, data + size);
    iodiag::decode_taskstats_reply(buf.data(), buf.size());
}
