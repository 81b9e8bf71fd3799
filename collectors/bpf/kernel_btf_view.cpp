#include "collectors/bpf/kernel_btf_view.hpp"

#include <fcntl.h>
#include <linux/btf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace iodiag {

namespace {

constexpr uint16_t kBtfMagic = 0xeB9F;

// Bytes that follow a type's btf_type record, by kind; nullopt for a kind
// this walker does not know (then it cannot find the next record).
std::optional<size_t> trailing_bytes(uint32_t kind, uint32_t vlen) {
    switch (kind) {
        case BTF_KIND_PTR: case BTF_KIND_FWD: case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE:
        case BTF_KIND_CONST: case BTF_KIND_RESTRICT: case BTF_KIND_FUNC: case BTF_KIND_FLOAT:
        case BTF_KIND_TYPE_TAG:
            return 0;
        case BTF_KIND_INT: case BTF_KIND_VAR: case BTF_KIND_DECL_TAG:
            return 4;
        case BTF_KIND_ARRAY:
            return sizeof(struct btf_array);
        case BTF_KIND_STRUCT: case BTF_KIND_UNION:
            return size_t{vlen} * sizeof(struct btf_member);
        case BTF_KIND_ENUM:
            return size_t{vlen} * sizeof(struct btf_enum);
        case BTF_KIND_FUNC_PROTO:
            return size_t{vlen} * sizeof(struct btf_param);
        case BTF_KIND_DATASEC:
            return size_t{vlen} * sizeof(struct btf_var_secinfo);
        case BTF_KIND_ENUM64:
            return size_t{vlen} * sizeof(struct btf_enum64);
        default:
            return std::nullopt;
    }
}

// `len` bytes at `off` lie within `size` (without overflowing).
bool within(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

}  // namespace

std::optional<KernelBtfView> KernelBtfView::of(std::string_view bytes, std::string& why) {
    btf_header h{};
    if (bytes.size() < sizeof h) {
        why = "shorter than a BTF header";
        return std::nullopt;
    }
    std::memcpy(&h, bytes.data(), sizeof h);
    if (h.magic != kBtfMagic || h.version != 1 || h.hdr_len < sizeof h || h.hdr_len > bytes.size()) {
        why = "not BTF version 1 in this machine's byte order";
        return std::nullopt;
    }
    // Records are read in place: the section must start 4-byte aligned.
    if ((reinterpret_cast<uintptr_t>(bytes.data()) + h.hdr_len + h.type_off) % alignof(btf_type) != 0) {
        why = "BTF type section not 4-byte aligned";
        return std::nullopt;
    }
    const std::string_view body = bytes.substr(h.hdr_len);
    if (!within(h.type_off, h.type_len, body.size()) || !within(h.str_off, h.str_len, body.size()) ||
        h.str_len == 0 || body[h.str_off + h.str_len - 1] != '\0') {
        why = "BTF sections out of bounds";
        return std::nullopt;
    }
    KernelBtfView v;
    v.types_ = body.substr(h.type_off, h.type_len);
    v.strings_ = body.substr(h.str_off, h.str_len);
    for (size_t off = 0; off < v.types_.size();) {
        if (!within(off, sizeof(btf_type), v.types_.size())) {
            why = "BTF type record cut short at byte " + std::to_string(off);
            return std::nullopt;
        }
        btf_type t{};
        std::memcpy(&t, v.types_.data() + off, sizeof t);
        const auto extra = trailing_bytes(BTF_INFO_KIND(t.info), BTF_INFO_VLEN(t.info));
        if (!extra) {
            why = "BTF kind " + std::to_string(BTF_INFO_KIND(t.info)) + " unknown to this walker";
            return std::nullopt;
        }
        if (!within(off + sizeof t, *extra, v.types_.size()) || t.name_off >= v.strings_.size()) {
            why = "BTF type " + std::to_string(v.offsets_.size() + 1) + " out of bounds";
            return std::nullopt;
        }
        v.offsets_.push_back(static_cast<uint32_t>(off));
        off += sizeof t + *extra;
    }
    return v;
}

// Records are 4-byte multiples and the section starts aligned (checked in of()).
const btf_type* KernelBtfView::type(uint32_t id) const {
    return reinterpret_cast<const btf_type*>(types_.data() + offsets_[id - 1]);
}

std::string_view KernelBtfView::record(uint32_t id) const {
    const size_t end = id < offsets_.size() ? offsets_[id] : types_.size();
    return types_.substr(offsets_[id - 1], end - offsets_[id - 1]);
}

std::string_view KernelBtfView::name_at(uint32_t offset) const {
    if (offset >= strings_.size()) return {};
    return std::string_view(strings_.data() + offset);   // NUL-terminated: the section ends in one
}

int KernelBtfView::find(std::string_view name, uint32_t kind) const {
    for (uint32_t id = 1; id <= offsets_.size(); ++id) {
        const btf_type* t = type(id);
        if (BTF_INFO_KIND(t->info) == kind && name_at(t->name_off) == name) return static_cast<int>(id);
    }
    return -1;
}

std::optional<int64_t> KernelBtfView::enum_value(std::string_view name) const {
    for (uint32_t id = 1; id <= offsets_.size(); ++id) {
        const btf_type* t = type(id);
        const uint32_t kind = BTF_INFO_KIND(t->info), n = BTF_INFO_VLEN(t->info);
        if (kind == BTF_KIND_ENUM) {
            const auto* e = reinterpret_cast<const struct btf_enum*>(t + 1);
            for (uint32_t i = 0; i < n; ++i)
                if (e[i].name_off < strings_.size() && name_at(e[i].name_off) == name) return e[i].val;
        } else if (kind == BTF_KIND_ENUM64) {
            const auto* e = reinterpret_cast<const struct btf_enum64*>(t + 1);
            for (uint32_t i = 0; i < n; ++i)
                if (e[i].name_off < strings_.size() && name_at(e[i].name_off) == name)
                    return static_cast<int64_t>((uint64_t{e[i].val_hi32} << 32) | e[i].val_lo32);
        }
    }
    return std::nullopt;
}

std::unique_ptr<MappedKernelBtf> MappedKernelBtf::map(const std::string& path, std::string& why) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        why = path + ": " + std::strerror(errno);
        return nullptr;
    }
    struct stat st {};
    void* data = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        data = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    close(fd);
    if (data == MAP_FAILED) {
        why = path + ": mmap: " + std::strerror(st.st_size > 0 ? err : EINVAL);
        return nullptr;
    }
    std::unique_ptr<MappedKernelBtf> m(new MappedKernelBtf(data, static_cast<size_t>(st.st_size)));
    std::string invalid;
    m->view_ = KernelBtfView::of(std::string_view(static_cast<const char*>(data), m->size_), invalid);
    if (!m->view_) {
        why = path + ": " + invalid;
        return nullptr;
    }
    return m;
}

MappedKernelBtf::~MappedKernelBtf() { munmap(data_, size_); }

}  // namespace iodiag
