#include "collectors/bpf/core_target_btf.hpp"

#include <linux/btf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "collectors/bpf/bpf_features.hpp"

namespace iodiag {

namespace {

// Where libbpf's whole-type comparison (bpf_core_types_are_compat) stops.
bool compared_by_kind_only(uint32_t kind) {
    return kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION || kind == BTF_KIND_ENUM || kind == BTF_KIND_ENUM64 ||
           kind == BTF_KIND_FWD || kind == BTF_KIND_INT || kind == BTF_KIND_FLOAT;
}

// Kinds a CO-RE root can be (libbpf matches a root with kernel types of its
// own kind; functions, variables and tags are never roots).
bool root_kind(uint32_t kind) { return compared_by_kind_only(kind) || kind == BTF_KIND_TYPEDEF; }

// Kinds whose btf_type.type names the one type they refer to.
bool refers_by_type_field(uint32_t kind) {
    return kind == BTF_KIND_PTR || kind == BTF_KIND_TYPEDEF || kind == BTF_KIND_VOLATILE || kind == BTF_KIND_CONST ||
           kind == BTF_KIND_RESTRICT || kind == BTF_KIND_TYPE_TAG;
}

// The type ids a type refers to; `by_value`: only those it holds (no pointer
// target, no function prototype's parameters).
std::vector<uint32_t> referred(const KernelBtfView& k, uint32_t id, bool by_value) {
    const btf_type* t = k.type(id);
    const uint32_t kind = BTF_INFO_KIND(t->info), n = BTF_INFO_VLEN(t->info);
    std::vector<uint32_t> ids;
    if (kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION) {
        const auto* m = reinterpret_cast<const struct btf_member*>(t + 1);
        for (uint32_t i = 0; i < n; ++i) ids.push_back(m[i].type);
    } else if (kind == BTF_KIND_ARRAY) {
        const auto* a = reinterpret_cast<const struct btf_array*>(t + 1);
        ids = {a->type, a->index_type};
    } else if (kind == BTF_KIND_FUNC_PROTO) {
        if (by_value) return ids;
        ids.push_back(t->type);
        const auto* p = reinterpret_cast<const struct btf_param*>(t + 1);
        for (uint32_t i = 0; i < n; ++i) ids.push_back(p[i].type);
    } else if (refers_by_type_field(kind) && !(by_value && kind == BTF_KIND_PTR)) {
        ids.push_back(t->type);
    }
    return ids;
}

// The copied types' records in their new order, with names and type ids
// rewritten, as raw BTF.
class Writer {
public:
    Writer(const KernelBtfView& k, const std::unordered_map<uint32_t, uint32_t>& new_id) : k_(k), new_id_(new_id) {}

    bool copy(uint32_t id, std::string& why) {
        const std::string_view rec = k_.record(id);
        const size_t at = types_.size();
        types_.append(rec);
        // Records are 4-byte multiples and the string's buffer is malloc-aligned.
        auto* t = reinterpret_cast<btf_type*>(types_.data() + at);
        const uint32_t kind = BTF_INFO_KIND(t->info), n = BTF_INFO_VLEN(t->info);
        if (!name(t->name_off, why)) return false;
        if (kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION) {
            auto* m = reinterpret_cast<struct btf_member*>(t + 1);
            for (uint32_t i = 0; i < n; ++i) {
                if (!name(m[i].name_off, why)) return false;
                if (!(m[i].type = to(m[i].type))) return missing(why);
            }
        } else if (kind == BTF_KIND_ENUM) {
            auto* e = reinterpret_cast<struct btf_enum*>(t + 1);
            for (uint32_t i = 0; i < n; ++i)
                if (!name(e[i].name_off, why)) return false;
        } else if (kind == BTF_KIND_ENUM64) {
            auto* e = reinterpret_cast<struct btf_enum64*>(t + 1);
            for (uint32_t i = 0; i < n; ++i)
                if (!name(e[i].name_off, why)) return false;
        } else if (kind == BTF_KIND_ARRAY) {
            auto* a = reinterpret_cast<struct btf_array*>(t + 1);
            if (!(a->type = to(a->type)) || !(a->index_type = to(a->index_type))) return missing(why);
        } else if (kind == BTF_KIND_FUNC_PROTO) {
            t->type = to(t->type);
            auto* p = reinterpret_cast<struct btf_param*>(t + 1);
            for (uint32_t i = 0; i < n; ++i) {
                if (!name(p[i].name_off, why)) return false;
                p[i].type = to(p[i].type);
            }
        } else if (refers_by_type_field(kind)) {
            // A pointer to a type not copied points to void; what a typedef
            // or modifier names is always copied.
            const uint32_t target = to(t->type);
            if (!target && t->type && kind != BTF_KIND_PTR) return missing(why);
            t->type = target;
        }
        return true;
    }

    // An anonymous `void *`: no candidate for anything (libbpf skips unnamed types).
    void placeholder() {
        btf_type t{};
        t.info = uint32_t{BTF_KIND_PTR} << 24;   // kind in bits 24-28, no members
        types_.append(reinterpret_cast<const char*>(&t), sizeof t);
    }

    std::string bytes() const {
        btf_header h{};
        h.magic = BTF_MAGIC;
        h.version = 1;
        h.hdr_len = sizeof h;
        h.type_off = 0;
        h.type_len = static_cast<uint32_t>(types_.size());
        h.str_off = h.type_len;
        h.str_len = static_cast<uint32_t>(strings_.size());
        std::string out(reinterpret_cast<const char*>(&h), sizeof h);
        return out + types_ + strings_;
    }

private:
    uint32_t to(uint32_t id) const {
        if (id == 0) return 0;
        auto it = new_id_.find(id);
        return it == new_id_.end() ? 0 : it->second;
    }
    bool missing(std::string& why) const {
        why = "a copied type refers by value to one not copied";
        return false;
    }
    // Rewrites a name offset into the new string section.
    bool name(uint32_t& off, std::string& why) {
        if (off == 0) return true;
        const std::string_view s = k_.name_at(off);
        if (s.empty()) {
            why = "kernel BTF name offset " + std::to_string(off) + " out of bounds";
            return false;
        }
        auto [it, fresh] = name_off_.emplace(off, static_cast<uint32_t>(strings_.size()));
        if (fresh) strings_.append(s).push_back('\0');
        off = it->second;
        return true;
    }

    const KernelBtfView& k_;
    const std::unordered_map<uint32_t, uint32_t>& new_id_;
    std::string types_, strings_{std::string(1, '\0')};
    std::unordered_map<uint32_t, uint32_t> name_off_;
};

}  // namespace

std::optional<std::string> core_target_btf(const KernelBtfView& k, const CoreRoots& roots, std::string& why) {
    if (roots.unknown_kind) {
        why = "a CO-RE relocation kind this reader does not know";
        return std::nullopt;
    }
    // The roots' candidates: one walk over the kernel's named types. Each is
    // copied with what it holds by value; from whole-type roots through every
    // reference until libbpf's comparison stops.
    std::unordered_set<std::string_view> wanted(roots.names.begin(), roots.names.end()), found;
    std::vector<uint32_t> pinned;   // ascending: the walk's order
    std::deque<std::pair<uint32_t, bool>> todo;   // id, follow every reference
    for (uint32_t id = 1; id <= k.type_count(); ++id) {
        const btf_type* t = k.type(id);
        if (t->name_off == 0 || !root_kind(BTF_INFO_KIND(t->info))) continue;
        const std::string_view name = core_essential_name(k.name_at(t->name_off));
        auto it = wanted.find(name);
        if (it == wanted.end()) continue;
        todo.emplace_back(id, roots.type_names.count(name) > 0);
        found.insert(*it);
        if (roots.id_names.count(name)) pinned.push_back(id);
    }
    for (const auto& name : roots.names)
        if (!found.count(name)) {
            why = "no type named " + name + " in vmlinux (libbpf would look in the modules' BTF)";
            return std::nullopt;
        }
    std::vector<bool> copied(k.type_count() + 1, false), followed(k.type_count() + 1, false);
    while (!todo.empty()) {
        auto [id, all] = todo.front();
        todo.pop_front();
        if (id == 0 || id > k.type_count()) continue;
        const uint32_t kind = BTF_INFO_KIND(k.type(id)->info);
        all = all && !compared_by_kind_only(kind);
        if (copied[id] && (!all || followed[id])) continue;
        copied[id] = true;
        followed[id] = followed[id] || all;
        for (uint32_t ref : referred(k, id, !all)) todo.emplace_back(ref, all);
    }
    // New ids: the pinned at their own, the others in kernel order around them.
    const uint32_t last_pinned = pinned.empty() ? 0 : pinned.back();
    std::unordered_map<uint32_t, uint32_t> new_id;
    std::vector<uint32_t> slot_of(1, 0);   // new id -> kernel id (0: placeholder)
    std::vector<uint32_t> rest;
    for (uint32_t id = 1; id <= k.type_count(); ++id)
        if (copied[id] && !std::binary_search(pinned.begin(), pinned.end(), id)) rest.push_back(id);
    size_t next = 0;
    for (uint32_t slot = 1; slot <= last_pinned; ++slot) {
        uint32_t id = 0;
        if (std::binary_search(pinned.begin(), pinned.end(), slot)) id = slot;
        else if (next < rest.size()) id = rest[next++];
        slot_of.push_back(id);
    }
    for (; next < rest.size(); ++next) slot_of.push_back(rest[next]);
    for (uint32_t slot = 1; slot < slot_of.size(); ++slot)
        if (slot_of[slot]) new_id[slot_of[slot]] = slot;
    Writer w(k, new_id);
    for (uint32_t slot = 1; slot < slot_of.size(); ++slot) {
        if (!slot_of[slot]) {
            w.placeholder();
            continue;
        }
        if (!w.copy(slot_of[slot], why)) return std::nullopt;
    }
    return w.bytes();
}

namespace {
std::string_view image_of(const void* (*elf_bytes)(size_t*)) {
    size_t size = 0;
    const void* elf = elf_bytes(&size);
    return {static_cast<const char*>(elf), size};
}
}  // namespace

CoreTargetFile::CoreTargetFile(const char* object, const void* (*elf_bytes)(size_t*))
    : CoreTargetFile(object, image_of(elf_bytes)) {}

CoreTargetFile::CoreTargetFile(const char* object, std::string_view elf) {
    make(elf);
    if (fd_ < 0) spdlog::debug("{}: CO-RE against all of vmlinux BTF: {}", object, why_);
}

void CoreTargetFile::make(std::string_view elf) {
    auto roots = core_relocation_roots(elf.data(), elf.size(), why_);
    if (!roots) return;
    if (roots->names.empty()) {
        why_ = "no CO-RE relocation";
        return;
    }
    const KernelBtfView* kernel = shared_kernel_btf_view(why_);
    if (!kernel) return;
    auto bytes = core_target_btf(*kernel, *roots, why_);
    if (!bytes) return;
    const int fd = memfd_create("iodiag-core-btf", MFD_CLOEXEC);
    if (fd < 0) {
        why_ = std::string("memfd_create: ") + std::strerror(errno);
        return;
    }
    size_t done = 0;
    while (done < bytes->size()) {
        const ssize_t n = write(fd, bytes->data() + done, bytes->size() - done);
        if (n <= 0) {
            why_ = std::string("writing the cut-down BTF: ") + std::strerror(n < 0 ? errno : EIO);
            close(fd);
            return;
        }
        done += static_cast<size_t>(n);
    }
    // libbpf opens the path: without /proc it would fail the load, not scan.
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (access(path.c_str(), R_OK) != 0) {
        why_ = path + ": " + std::strerror(errno);
        close(fd);
        return;
    }
    fd_ = fd;
    path_ = path;
}

CoreTargetFile::~CoreTargetFile() {
    if (fd_ >= 0) close(fd_);
}

}  // namespace iodiag
