#include "collectors/bpf/bpf_array_read.hpp"

#include <cerrno>
#include <cstring>

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#endif

namespace iodiag {

size_t read_array_map(int fd, uint32_t entries, size_t elem_bytes, unsigned char* buf, uint32_t chunk,
                      const std::function<void(uint32_t first, uint32_t n)>& fn) {
#if IODIAG_HAVE_BPF
    if (entries == 0 || elem_bytes == 0 || chunk == 0) return 0;
    std::vector<uint32_t> keys(chunk);
    uint32_t done = 0, cursor = 0;
    // Batches while the kernel answers them with the indexes in order; from
    // the first refusal (no batch operations for this kernel or map) or
    // surprise on, element by element.
    bool batched = true;
    size_t read = 0;
    while (done < entries && batched) {
        uint32_t count = std::min(chunk, entries - done);
        const uint32_t asked = count;
        LIBBPF_OPTS(bpf_map_batch_opts, opts);
        // in_batch NULL starts at index 0; afterwards the kernel's cursor.
        const int err =
            bpf_map_lookup_batch(fd, done == 0 ? nullptr : &cursor, &cursor, keys.data(), buf, &count, &opts);
        if ((err != 0 && err != -ENOENT) || count == 0 || count > asked) {
            batched = false;
            break;
        }
        for (uint32_t i = 0; i < count; ++i)
            if (keys[i] != done + i) batched = false;
        if (!batched) break;
        fn(done, count);
        done += count;
        read += count;
        if (err != 0) break;   // ENOENT: the map ended early
    }
    for (; done < entries; done += std::min(chunk, entries - done)) {
        const uint32_t n = std::min(chunk, entries - done);
        std::memset(buf, 0, size_t(n) * elem_bytes);
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t key = done + i;
            if (bpf_map_lookup_elem(fd, &key, buf + size_t(i) * elem_bytes) == 0) ++read;
        }
        fn(done, n);
    }
    return read;
#else
    (void)fd, (void)entries, (void)elem_bytes, (void)buf, (void)chunk, (void)fn;
    return 0;
#endif
}

}  // namespace iodiag
