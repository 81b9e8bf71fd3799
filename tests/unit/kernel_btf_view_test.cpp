// Lookups in raw BTF bytes (collectors/bpf/kernel_btf_view.hpp): built blobs for
// each kind the walker sizes and each way bytes can be wrong, and the
// machine's own vmlinux BTF, mapped and as libbpf's parse holds it, against
// libbpf's answers.
#include <gtest/gtest.h>

#include <bpf/btf.h>
#include <linux/btf.h>

#include <cstring>
#include <memory>

#include "collectors/bpf/kernel_btf_view.hpp"

using iodiag::KernelBtfView;
using iodiag::MappedKernelBtf;

namespace {

// Builds a BTF blob type by type; strings are interned in order.
class BtfBuilder {
public:
    BtfBuilder() { strings_.push_back('\0'); }
    uint32_t str(const std::string& s) {
        const auto off = static_cast<uint32_t>(strings_.size());
        strings_.insert(strings_.end(), s.begin(), s.end());
        strings_.push_back('\0');
        return off;
    }
    // A btf_type record (name, kind, vlen, size-or-type) followed by `extra` 32-bit words.
    BtfBuilder& type(const std::string& name, uint32_t kind, uint32_t vlen, uint32_t size_or_type,
                     std::vector<uint32_t> extra = {}) {
        put(name.empty() ? 0 : str(name));
        put(kind << 24 | vlen);   // btf_type.info: kind in bits 24-28, vlen in 0-15
        put(size_or_type);
        for (uint32_t w : extra) put(w);
        return *this;
    }
    // Builds the blob (header, types, strings) and returns it.
    std::string_view bytes() {
        btf_header h{};
        h.magic = 0xeB9F;
        h.version = 1;
        h.hdr_len = sizeof h;
        h.type_off = 0;
        h.type_len = static_cast<uint32_t>(types_.size() * 4);
        h.str_off = h.type_len;
        h.str_len = static_cast<uint32_t>(strings_.size());
        blob_.assign(reinterpret_cast<const char*>(&h), sizeof h);
        blob_.append(reinterpret_cast<const char*>(types_.data()), types_.size() * 4);
        blob_.append(strings_.data(), strings_.size());
        return blob_;
    }
    // After bytes(): the built blob's header, to damage, and the blob as it is now.
    btf_header& header() { return *reinterpret_cast<btf_header*>(blob_.data()); }
    std::string_view built() const { return blob_; }

private:
    void put(uint32_t w) { types_.push_back(w); }
    std::vector<uint32_t> types_;
    std::vector<char> strings_;
    std::string blob_;
};

BtfBuilder every_kind_it_sizes() {
    BtfBuilder b;
    const uint32_t a = b.str("A"), throttled = b.str("BIO_BPS_THROTTLED"), big = b.str("BIG"), p = b.str("p");
    b.type("int", BTF_KIND_INT, 0, 4, {32})                                   // 1
        .type("btf_trace_block_rq_issue", BTF_KIND_TYPEDEF, 0, 1)             // 2
        .type("bio_flags", BTF_KIND_ENUM, 2, 4, {a, 3, throttled, 5})         // 3
        .type("wide", BTF_KIND_ENUM64, 1, 8, {big, 0, 1})                     // 4: BIG = 1 << 32
        .type("", BTF_KIND_FUNC_PROTO, 1, 1, {p, 1})                          // 5
        .type("vfs_read", BTF_KIND_FUNC, 0, 5)                                // 6
        .type("request", BTF_KIND_STRUCT, 1, 8, {p, 1, 0})                    // 7
        .type("", BTF_KIND_ARRAY, 0, 0, {1, 1, 4})                            // 8
        .type("", BTF_KIND_PTR, 0, 7)                                         // 9
        .type("btf_trace_block_rq_issue", BTF_KIND_STRUCT, 0, 0);             // 10: same name, other kind
    return b;
}

}  // namespace

TEST(KernelBtfView, FindsTypesByNameAndKindAndEnumeratorValues) {
    BtfBuilder b = every_kind_it_sizes();
    std::string why;
    const auto v = KernelBtfView::of(b.bytes(), why);
    ASSERT_TRUE(v) << why;
    EXPECT_EQ(v->find("btf_trace_block_rq_issue", BTF_KIND_TYPEDEF), 2);
    EXPECT_EQ(v->find("btf_trace_block_rq_issue", BTF_KIND_STRUCT), 10);
    EXPECT_EQ(v->find("vfs_read", BTF_KIND_FUNC), 6);
    EXPECT_EQ(v->find("request", BTF_KIND_STRUCT), 7);
    EXPECT_EQ(v->find("vfs_read", BTF_KIND_TYPEDEF), -1);
    EXPECT_EQ(v->find("vfs_write", BTF_KIND_FUNC), -1);
    EXPECT_EQ(v->enum_value("BIO_BPS_THROTTLED"), 5);
    EXPECT_EQ(v->enum_value("A"), 3);
    EXPECT_EQ(v->enum_value("BIG"), int64_t{1} << 32);
    EXPECT_EQ(v->enum_value("p"), std::nullopt);   // a parameter's name, not an enumerator
}

TEST(KernelBtfView, RefusesBytesThatAreNotBtfItCanWalk) {
    std::string why;
    {
        BtfBuilder b = every_kind_it_sizes();
        EXPECT_FALSE(KernelBtfView::of(b.bytes().substr(0, 10), why));
        EXPECT_EQ(why, "shorter than a BTF header");
    }
    {
        BtfBuilder b = every_kind_it_sizes();
        b.bytes();
        b.header().str_len -= 1;   // the string section no longer ends in a NUL
        EXPECT_FALSE(KernelBtfView::of(b.built(), why));
        EXPECT_EQ(why, "BTF sections out of bounds");
    }
    {
        BtfBuilder b = every_kind_it_sizes();
        b.bytes();
        b.header().magic = 0x9FeB;   // the other byte order
        EXPECT_FALSE(KernelBtfView::of(b.built(), why));
        EXPECT_EQ(why, "not BTF version 1 in this machine's byte order");
    }
    {
        BtfBuilder b;
        b.type("int", BTF_KIND_INT, 0, 4, {32}).type("new", 31, 0, 0).type("after", BTF_KIND_TYPEDEF, 0, 1);
        EXPECT_FALSE(KernelBtfView::of(b.bytes(), why));
        EXPECT_EQ(why, "BTF kind 31 unknown to this walker");
    }
    {
        BtfBuilder b;
        b.type("s", BTF_KIND_STRUCT, 3, 8, {0, 1, 0});   // says 3 members, holds 1
        EXPECT_FALSE(KernelBtfView::of(b.bytes(), why));
        EXPECT_EQ(why, "BTF type 1 out of bounds");
    }
    {
        BtfBuilder b = every_kind_it_sizes();
        b.bytes();
        b.header().str_len += 8;   // past the end of the blob
        EXPECT_FALSE(KernelBtfView::of(b.built(), why));
        EXPECT_EQ(why, "BTF sections out of bounds");
    }
}

TEST(KernelBtfView, AgreesWithLibbpfOnThisMachinesKernelBtf) {
    std::string why;
    const auto mapped = MappedKernelBtf::map("/sys/kernel/btf/vmlinux", why);
    if (!mapped) GTEST_SKIP() << "kernel BTF not mapped here: " << why;
    std::unique_ptr<btf, decltype(&btf__free)> parsed(btf__load_vmlinux_btf(), btf__free);
    ASSERT_TRUE(parsed) << "libbpf could not parse the kernel BTF the view read";
    const KernelBtfView& v = mapped->view();
    // The probes' fallback where the kernel refuses the mapping: a view of the
    // bytes libbpf's parse holds.
    uint32_t raw_size = 0;
    const void* raw = btf__raw_data(parsed.get(), &raw_size);
    ASSERT_NE(raw, nullptr);
    const auto of_parsed = KernelBtfView::of(std::string_view(static_cast<const char*>(raw), raw_size), why);
    ASSERT_TRUE(of_parsed) << why;
    for (const auto& [name, kind] : std::vector<std::pair<std::string, uint32_t>>{
             {"btf_trace_block_rq_issue", BTF_KIND_TYPEDEF}, {"btf_trace_sched_switch", BTF_KIND_TYPEDEF},
             {"vfs_read", BTF_KIND_FUNC}, {"task_struct", BTF_KIND_STRUCT}, {"no_such_type_here", BTF_KIND_STRUCT}})
    {
        const int libbpf_id = btf__find_by_name_kind(parsed.get(), name.c_str(), kind);   // -ENOENT when absent
        EXPECT_EQ(v.find(name, kind), libbpf_id < 0 ? -1 : libbpf_id) << name;
        EXPECT_EQ(of_parsed->find(name, kind), libbpf_id < 0 ? -1 : libbpf_id) << name << " (libbpf's bytes)";
    }
    // The enumerator the syscall collector reads, as libbpf's types give it.
    std::optional<int64_t> expected;
    for (uint32_t id = 1; id < btf__type_cnt(parsed.get()) && !expected; ++id) {
        const btf_type* t = btf__type_by_id(parsed.get(), id);
        if (!btf_is_enum(t)) continue;
        for (int i = 0; i < btf_vlen(t); ++i)
            if (std::strcmp(btf__name_by_offset(parsed.get(), btf_enum(t)[i].name_off), "BIO_BPS_THROTTLED") == 0)
                expected = btf_enum(t)[i].val;
    }
    EXPECT_EQ(v.enum_value("BIO_BPS_THROTTLED"), expected);
    EXPECT_EQ(of_parsed->enum_value("BIO_BPS_THROTTLED"), expected);
}
