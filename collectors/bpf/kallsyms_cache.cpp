#include "collectors/bpf/kallsyms_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>

#include "collectors/text_file.hpp"
#include "engine/evidence/atomic_file.hpp"

namespace iodiag {

namespace {

constexpr const char* kMagic = "iodiag kallsyms ranges 1\n";
constexpr size_t kMaxCacheBytes = size_t{1} << 20;   // a few KiB in practice

bool has_space(const std::string& s) { return s.find_first_of(" \t\r\n") != std::string::npos; }

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) {
            out.push_back(text.substr(pos));
            break;
        }
        out.push_back(text.substr(pos, nl - pos));
        pos = nl + 1;
    }
    return out;
}

// The whole of `s` as a number in `base`, in range (no sign for unsigned, no
// spaces; hex digits lower case, as the cache writes them).
template <class T>
bool parse_number(const std::string& s, T& v, int base = 10) {
    if (s.empty() || (base == 16 && s.find_first_of("ABCDEF") != std::string::npos)) return false;
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(s.data(), end, v, base);
    return ec == std::errc{} && ptr == end;
}

std::string hex(uint64_t v) {
    char b[17];
    snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v));
    return b;
}

// What a differing key line means, for the debug log.
std::string what_differs(const std::string& cached_line) {
    if (cached_line.rfind("boot_id ", 0) == 0) return "another boot";
    if (cached_line.rfind("module", 0) == 0) return "another set of loaded modules";
    if (cached_line.rfind("want ", 0) == 0) return "another set of wanted functions";
    if (cached_line.rfind("ranges ", 0) == 0) return "another set of loaded modules or wanted functions";
    return "another format";
}

// The cache directory, created if missing; false (with why) unless it is a
// directory of this user's that no one else can enter.
bool private_dir(const std::string& dir, std::string& why) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        why = "cannot create " + dir + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        why = dir + ": " + std::strerror(errno);
        return false;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        why = dir + " is not a directory of this user's with mode 0700";
        return false;
    }
    return true;
}

// The cache file's text; nullopt (with why) when missing, unreadable or not
// a regular file of this user's that only it can write.
std::optional<std::string> read_private_file(const std::string& path, std::string& why) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        why = errno == ENOENT ? "no cache yet" : path + ": " + std::strerror(errno);
        return std::nullopt;
    }
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0 ||
        st.st_size < 0 || size_t(st.st_size) > kMaxCacheBytes) {
        why = path + " is not a regular file of this user's, writable only by it, under 1 MiB";
        ::close(fd);
        return std::nullopt;
    }
    text.resize(size_t(st.st_size));
    size_t have = 0;
    while (have < text.size()) {
        const ssize_t n = ::read(fd, text.data() + have, text.size() - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += size_t(n);
    }
    ::close(fd);
    text.resize(have);
    return text;
}

// The key of the state as it is now, or nullopt (with why).
std::optional<std::string> current_key(const KallsymsSources& src, const std::map<std::string, int>& wanted,
                                       std::string& why) {
    const auto boot = try_read_text_file(src.boot_id);
    if (!boot) {
        why = "cannot read " + src.boot_id;
        return std::nullopt;
    }
    std::optional<std::string> modules;
    struct stat st {};
    if (::stat(src.modules.c_str(), &st) == 0) {
        modules = try_read_text_file(src.modules);
        if (!modules) {
            why = "cannot read " + src.modules;
            return std::nullopt;
        }
    } else if (errno != ENOENT) {
        why = src.modules + ": " + std::strerror(errno);
        return std::nullopt;
    }
    return kallsyms_cache_key(*boot, modules, wanted, why);
}

}  // namespace

std::optional<std::string> kallsyms_cache_key(const std::string& boot_id_text,
                                              const std::optional<std::string>& modules_text,
                                              const std::map<std::string, int>& wanted, std::string& why) {
    std::string boot = boot_id_text;
    while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
    if (boot.empty() || has_space(boot)) {
        why = "no boot id";
        return std::nullopt;
    }
    std::string key = "boot_id " + boot + "\n";
    if (!modules_text) {
        key += "modules none\n";   // no module support: only the core kernel's text, fixed for the boot
    } else {
        // "name size refcount users state address [taints]"
        for (const auto& line : lines_of(*modules_text)) {
            const auto f = split_ws(line);
            if (f.empty()) continue;
            if (f.size() < 6) {
                why = "a /proc/modules line without a load address: " + line;
                return std::nullopt;
            }
            if (f[4] != "Live") {
                why = "module " + f[0] + " is " + f[4];
                return std::nullopt;
            }
            if (f[5].find_first_not_of("0x") == std::string::npos) {
                why = "module addresses hidden (" + f[0] + " at " + f[5] + ")";
                return std::nullopt;
            }
            key += "module " + f[0] + " " + f[1] + " " + f[5] + "\n";
        }
    }
    for (const auto& [name, tag] : wanted) {
        if (name.empty() || has_space(name)) {
            why = "a wanted name with a space";
            return std::nullopt;
        }
        key += "want " + name + " " + std::to_string(tag) + "\n";
    }
    return key;
}

std::string format_kallsyms_cache(const std::string& key, const std::vector<KernelSymbolRange>& ranges) {
    std::string out = kMagic + key + "ranges " + std::to_string(ranges.size()) + "\n";
    for (const auto& r : ranges)
        out += hex(r.start) + " " + hex(r.end) + " " + std::to_string(r.tag) + " " + r.name + "\n";
    return out + "end\n";
}

std::optional<std::vector<KernelSymbolRange>> parse_kallsyms_cache(const std::string& text, const std::string& key,
                                                                   const std::map<std::string, int>& wanted,
                                                                   std::string& why) {
    const std::string header = kMagic + key;
    if (text.compare(0, header.size(), header) != 0) {
        const auto want = lines_of(header), have = lines_of(text);
        for (size_t i = 0; i < want.size(); ++i)
            if (i >= have.size() || have[i] != want[i]) {
                why = i == 0 ? "not a cache file of this version"
                             : i >= have.size() ? "truncated" : "written for " + what_differs(have[i]);
                return std::nullopt;
            }
        why = "truncated";
        return std::nullopt;
    }
    const auto lines = lines_of(text.substr(header.size()));
    const bool ends_with_newline = !text.empty() && text.back() == '\n';
    long long n = -1;
    if (lines.empty() || lines[0].rfind("ranges ", 0) != 0 || !parse_number(lines[0].substr(7), n) || n <= 0 ||
        lines.size() != size_t(n) + 2 || lines.back() != "end" || !ends_with_newline) {
        why = "truncated or malformed";
        return std::nullopt;
    }
    std::vector<KernelSymbolRange> out;
    for (size_t i = 1; i <= size_t(n); ++i) {
        const auto f = split_ws(lines[i]);
        KernelSymbolRange r;
        long long tag = 0;
        if (f.size() != 4 || !parse_number(f[0], r.start, 16) || !parse_number(f[1], r.end, 16) || !parse_number(f[2], tag) ||
            r.start == 0 || r.start >= r.end || (!out.empty() && out.back().start >= r.start)) {
            why = "malformed range line " + std::to_string(i);
            return std::nullopt;
        }
        const auto w = wanted.find(f[3]);
        if (w == wanted.end() || w->second != tag) {
            why = "range line " + std::to_string(i) + " names an unwanted function";
            return std::nullopt;
        }
        r.name = w->first;
        r.tag = w->second;
        out.push_back(std::move(r));
    }
    return out;
}

CachedKernelSymbols resolve_kernel_symbols_cached(const KallsymsSources& src,
                                                  const std::map<std::string, int>& wanted) {
    CachedKernelSymbols out;
    std::string why;
    std::optional<std::string> key;
    bool dir_ok = false;
    const std::string cache_path = src.cache_dir + "/" + kKallsymsCacheFile;
    if (src.cache_dir.empty()) {
        why = "no cache directory";
    } else if ((key = current_key(src, wanted, why)) && (dir_ok = private_dir(src.cache_dir, why))) {
        if (const auto text = read_private_file(cache_path, why)) {
            if (auto ranges = parse_kallsyms_cache(*text, *key, wanted, why)) {
                out.ranges = std::move(ranges);
                out.from_cache = true;
                out.how = "from " + cache_path;
                return out;
            }
            why = cache_path + " not used: " + why;
        }
    }
    out.ranges = resolve_kernel_symbols_in_file(src.kallsyms, wanted);
    out.how = "read " + src.kallsyms + " (" + why + ")";
    if (!key || !dir_ok) return out;
    // Written only for a state that held during the whole read: a module
    // loaded or unloaded meanwhile would pair these ranges with a key they
    // do not belong to.
    std::string why_not;
    const auto after = current_key(src, wanted, why_not);
    if (!out.ranges || out.ranges->empty()) {
        why_not = "nothing resolved";
    } else if (!after || *after != *key) {
        if (after) why_not = "the modules changed during the read";
    } else {
        try {
            write_file_atomically(cache_path, format_kallsyms_cache(*key, *out.ranges));
            out.how += "; cached in " + cache_path;
            return out;
        } catch (const std::exception& e) {
            why_not = e.what();
        }
    }
    out.how += "; not cached: " + why_not;
    return out;
}

}  // namespace iodiag
