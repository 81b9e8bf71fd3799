// Lookups in raw BTF bytes without copying them: the feature probes' few
// questions about the kernel's types (a type's id by name and kind, an
// enumerator's value), and the records core_target_btf.hpp copies, read from a
// read-only mapping of
// /sys/kernel/btf/vmlinux (recent kernels allow one; this 6.18 does). libbpf 1.1 can only
// answer after copying and indexing the whole 5.5 MiB (btf__new), ~10-20 ms
// and 6 MiB of fresh memory on every start; one walk over the mapped types
// takes ~4 ms here.
//
//   auto v = KernelBtfView::of(bytes, why);    // nullopt: not BTF this walker reads
//   int id = v->find("btf_trace_block_rq_issue", BTF_KIND_TYPEDEF);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct btf_type;

namespace iodiag {

class KernelBtfView {
public:
    // A view of `bytes` (which must outlive it), after checking the header,
    // the sections' bounds and every type record; nullopt with `why` when
    // they are not BTF as documented (Documentation/bpf/btf.rst), or hold a
    // kind this walker does not know the size of (a newer kernel's).
    static std::optional<KernelBtfView> of(std::string_view bytes, std::string& why);

    // The id of the first type with this name and kind (BTF_KIND_*), or -1.
    int find(std::string_view name, uint32_t kind) const;
    // The value of the first enumerator with this name (enum or enum64), or nullopt.
    std::optional<int64_t> enum_value(std::string_view name) const;

    // The number of types (ids 1..type_count(); 0 is void).
    uint32_t type_count() const { return static_cast<uint32_t>(offsets_.size()); }
    // Type `id` (1..type_count()): its record, and the record with the bytes
    // that follow it (members, enumerators, ...).
    const btf_type* type(uint32_t id) const;
    std::string_view record(uint32_t id) const;
    // The string at `offset` of the string section; empty when past its end.
    std::string_view name_at(uint32_t offset) const;

private:
    KernelBtfView() = default;

    std::string_view types_, strings_;
    std::vector<uint32_t> offsets_;   // type id - 1 -> its record's offset in types_
};

// /sys/kernel/btf/vmlinux mapped read-only, with its view; nullptr with `why`
// when the kernel refuses the mapping or the view refuses the bytes.
class MappedKernelBtf {
public:
    static std::unique_ptr<MappedKernelBtf> map(const std::string& path, std::string& why);
    ~MappedKernelBtf();
    MappedKernelBtf(const MappedKernelBtf&) = delete;
    MappedKernelBtf& operator=(const MappedKernelBtf&) = delete;
    const KernelBtfView& view() const { return *view_; }

private:
    MappedKernelBtf(void* data, size_t size) : data_(data), size_(size) {}
    void* data_;
    size_t size_;
    std::optional<KernelBtfView> view_;
};

}  // namespace iodiag
