#include "collectors/bpf/core_relocations.hpp"

#include <bpf/btf.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/bpf.h>
#include <linux/btf.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace iodiag {

namespace {

// The .BTF.ext header (Documentation/bpf/btf.rst; libbpf's struct
// btf_ext_header): offsets count from the header's end. The CO-RE part is
// optional: an older header ends before it.
struct BtfExtHeader {
    uint16_t magic;
    uint8_t version;
    uint8_t flags;
    uint32_t hdr_len;
    uint32_t func_info_off, func_info_len;
    uint32_t line_info_off, line_info_len;
    uint32_t core_relo_off, core_relo_len;
};
struct ElfDeleter {
    void operator()(Elf* e) const { elf_end(e); }
};
struct BtfDeleter {
    void operator()(btf* b) const { btf__free(b); }
};

// The .BTF and .BTF.ext sections' bytes (empty when absent), or false.
bool btf_sections(const void* image, size_t size, std::string_view& types, std::string_view& ext, std::string& why) {
    if (elf_version(EV_CURRENT) == EV_NONE) {
        why = std::string("libelf: ") + elf_errmsg(-1);
        return false;
    }
    // elf_memory() reads the image in place (ELF_C_READ): it is not written.
    std::unique_ptr<Elf, ElfDeleter> e(elf_memory(static_cast<char*>(const_cast<void*>(image)), size));
    size_t names = 0;
    if (!e || elf_kind(e.get()) != ELF_K_ELF || elf_getshdrstrndx(e.get(), &names) != 0) {
        why = std::string("not an ELF object: ") + elf_errmsg(-1);
        return false;
    }
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(e.get(), scn)) != nullptr;) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        const char* name = elf_strptr(e.get(), names, sh.sh_name);
        if (!name || (std::strcmp(name, ".BTF") != 0 && std::strcmp(name, ".BTF.ext") != 0)) continue;
        Elf_Data* d = elf_getdata(scn, nullptr);
        if (!d || !d->d_buf) continue;
        (std::strcmp(name, ".BTF") == 0 ? types : ext) = std::string_view(static_cast<const char*>(d->d_buf), d->d_size);
    }
    return true;
}

bool type_relocation(uint32_t kind) {
    return kind == BPF_CORE_TYPE_ID_TARGET || kind == BPF_CORE_TYPE_EXISTS || kind == BPF_CORE_TYPE_SIZE;
}

}  // namespace

std::string_view core_essential_name(std::string_view name) {
    // libbpf's bpf_core_essential_name_len(): the last "X___Y" (X and Y not
    // underscores) ends the essential part after X.
    for (size_t i = name.size() >= 5 ? name.size() - 5 + 1 : 0; i-- > 0;)
        if (name[i] != '_' && name[i + 1] == '_' && name[i + 2] == '_' && name[i + 3] == '_' && name[i + 4] != '_')
            return name.substr(0, i + 1);
    return name;
}

std::optional<CoreRoots> core_relocation_roots(const void* elf, size_t size, std::string& why) {
    std::string_view types, ext;
    if (!btf_sections(elf, size, types, ext, why)) return std::nullopt;
    CoreRoots roots;
    BtfExtHeader h{};
    if (ext.size() < offsetof(BtfExtHeader, core_relo_off)) return roots;   // no .BTF.ext: no CO-RE
    std::memcpy(&h, ext.data(), std::min(ext.size(), sizeof h));
    if (h.magic != BTF_MAGIC || h.hdr_len > ext.size()) {
        why = ".BTF.ext: not BTF.ext version 1 in this machine's byte order";
        return std::nullopt;
    }
    if (h.hdr_len < sizeof h || h.core_relo_len == 0) return roots;   // an older header: no CO-RE part
    const std::string_view relos = ext.substr(h.hdr_len);
    if (h.core_relo_off > relos.size() || h.core_relo_len > relos.size() - h.core_relo_off || h.core_relo_len < 4) {
        why = ".BTF.ext: CO-RE relocations out of bounds";
        return std::nullopt;
    }
    std::unique_ptr<btf, BtfDeleter> local(btf__new(types.data(), static_cast<uint32_t>(types.size())));
    if (types.empty() || !local) {
        why = ".BTF: unreadable (CO-RE relocations name its types)";
        return std::nullopt;
    }
    // u32 record size, then per ELF section: u32 name offset, u32 count, the records.
    const std::string_view s = relos.substr(h.core_relo_off, h.core_relo_len);
    auto u32_at = [&](size_t off) {
        uint32_t v;
        std::memcpy(&v, s.data() + off, 4);
        return v;
    };
    const uint32_t rec_size = u32_at(0);
    if (rec_size < sizeof(bpf_core_relo)) {
        why = ".BTF.ext: CO-RE record of " + std::to_string(rec_size) + " bytes";
        return std::nullopt;
    }
    for (size_t off = 4; off < s.size();) {
        if (s.size() - off < 8) {
            why = ".BTF.ext: CO-RE section header cut short";
            return std::nullopt;
        }
        const uint32_t count = u32_at(off + 4);
        off += 8;
        if (count > (s.size() - off) / rec_size) {
            why = ".BTF.ext: CO-RE records cut short";
            return std::nullopt;
        }
        for (uint32_t i = 0; i < count; ++i, off += rec_size) {
            bpf_core_relo r;
            std::memcpy(&r, s.data() + off, sizeof r);
            if (r.kind == BPF_CORE_TYPE_ID_LOCAL) continue;   // answered from the object's own types
            if (r.kind > BPF_CORE_ENUMVAL_VALUE) roots.unknown_kind = true;
            const btf_type* t = btf__type_by_id(local.get(), r.type_id);
            const char* name = t ? btf__name_by_offset(local.get(), t->name_off) : nullptr;
            if (!name || !*name) {
                why = ".BTF.ext: CO-RE relocation of an unnamed type (id " + std::to_string(r.type_id) + ")";
                return std::nullopt;
            }
            std::string essential(core_essential_name(name));
            if (type_relocation(r.kind)) roots.type_names.insert(essential);
            if (r.kind == BPF_CORE_TYPE_ID_TARGET) roots.id_names.insert(essential);
            roots.names.insert(std::move(essential));
        }
    }
    return roots;
}

}  // namespace iodiag
