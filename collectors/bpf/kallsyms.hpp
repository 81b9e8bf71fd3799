// /proc/kallsyms, read in user space: turns kernel function names into text
// address ranges so a BPF program can tell which function a stack frame is in.
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

namespace iodiag {

struct KernelSymbolRange {
    uint64_t start = 0;
    uint64_t end = 0;    // exclusive: the next symbol's address
    std::string name;    // as wanted (a ".isra.0"/".constprop.0" clone maps to its base name)
    int tag = 0;         // the caller's value for that name (e.g. a wait class)
};

// From the text of /proc/kallsyms, the ranges of every text symbol whose name
// (or base name before a '.' suffix) is a key of `wanted`, sorted by start.
// All-zero addresses (kallsyms read without privilege) yield nothing.
// Malformed lines are skipped.
std::vector<KernelSymbolRange> resolve_kernel_symbols(const std::string& kallsyms_text,
                                                      const std::map<std::string, int>& wanted);
// The same, read from a file in large chunks (/proc/kallsyms has ~100-200k
// lines; only the addresses and the wanted symbols are kept, never the whole
// text). nullopt when the file cannot be opened.
std::optional<std::vector<KernelSymbolRange>> resolve_kernel_symbols_in_file(const std::string& path,
                                                                            const std::map<std::string, int>& wanted);

}  // namespace iodiag
