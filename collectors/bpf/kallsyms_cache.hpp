// The wait classifier's kernel function ranges, kept for the rest of the boot:
// generating and parsing /proc/kallsyms costs ~40-70 ms of CPU at every start,
// on cores the BPF verifier needs at that very moment.
//
// The ranges depend on the core kernel's text (fixed for one boot), on the
// loaded modules (a module's symbols move when it is reloaded) and on the
// functions asked for. The cache stores that state in full, not a hash of it,
// and is used only when the state read now is the same byte for byte; any
// difference, unreadable state or damaged file means /proc/kallsyms is read
// as without a cache.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/bpf/kallsyms.hpp"

namespace iodiag {

// What the resolved ranges depend on, as text: the boot id, every module's
// name, size and load address (refcounts and users change all the time and
// do not move symbols), and every wanted name with its tag. nullopt, with
// `why`, when that state cannot be told exactly: no boot id, module addresses
// hidden (all zero), a module still loading or unloading, a malformed line.
// `modules_text` nullopt: no /proc/modules, a kernel without module support.
std::optional<std::string> kallsyms_cache_key(const std::string& boot_id_text,
                                              const std::optional<std::string>& modules_text,
                                              const std::map<std::string, int>& wanted, std::string& why);

// The cache file's text for `key` and its ranges, and its reverse: nullopt,
// with `why`, unless the text is a whole cache file (nothing missing, nothing
// after its end mark) for exactly this key whose ranges are well formed
// (sorted, non-empty, each a wanted name with the wanted tag).
std::string format_kallsyms_cache(const std::string& key, const std::vector<KernelSymbolRange>& ranges);
std::optional<std::vector<KernelSymbolRange>> parse_kallsyms_cache(const std::string& text, const std::string& key,
                                                                   const std::map<std::string, int>& wanted,
                                                                   std::string& why);

struct KallsymsSources {
    std::string kallsyms = "/proc/kallsyms";
    std::string boot_id = "/proc/sys/kernel/random/boot_id";
    std::string modules = "/proc/modules";
    // Where the cache lives: created 0700 if missing, used only when it is a
    // directory (not a link) owned by this user that no one else can write.
    // Empty: no cache.
    std::string cache_dir = "/run/iodiag";
};

inline constexpr const char* kKallsymsCacheFile = "kallsyms-ranges";

struct CachedKernelSymbols {
    std::optional<std::vector<KernelSymbolRange>> ranges;   // nullopt: kallsyms unreadable
    bool from_cache = false;
    std::string how;   // for the debug log: the cache used, or why not and whether it was written
};

// resolve_kernel_symbols_in_file(), through the cache: the cached ranges
// when the cache's key is the state read now; otherwise the file's ranges,
// written to the cache (atomically) when the state was the same before and
// after the read and something was resolved.
CachedKernelSymbols resolve_kernel_symbols_cached(const KallsymsSources& src,
                                                  const std::map<std::string, int>& wanted);

}  // namespace iodiag
