// The per-boot cache of the wait classifier's kernel function ranges: used
// only for the very state it was written for (boot, loaded modules, wanted
// functions), never when damaged; otherwise /proc/kallsyms is read.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/bpf/kallsyms_cache.hpp"

using namespace iodiag;
namespace fs = std::filesystem;

namespace {

const std::map<std::string, int> kWanted = {{"filemap_read", 1}, {"xfs_log_force", 3}};

// A fake /proc (kallsyms, boot_id, modules) and a cache directory in a
// private temporary folder.
class KallsymsCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        // tmpfs where there is one: the cache's atomic write syncs, and the
        // truncation test writes it a few hundred times.
        std::string tmpl = (fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp") + std::string("/iodiag-kallsyms-cache-XXXXXX");
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl.c_str();
        src_.kallsyms = dir_ + "/kallsyms";
        src_.boot_id = dir_ + "/boot_id";
        src_.modules = dir_ + "/modules";
        src_.cache_dir = dir_ + "/cache";
        write(src_.boot_id, "2c0dae56-f483-4707-937b-07f26538020c\n");
        write(src_.modules, "xfs 2285568 1 - Live 0xffffffffc0400000\njbd2 200704 1 ext4, Live 0xffffffffc0300000\n");
        write(src_.kallsyms, kallsyms_at(0xffffffffc0400100));
    }
    void TearDown() override { fs::remove_all(dir_); }

    static void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
    // filemap_read in the core kernel, xfs_log_force in the xfs module at `xfs_fn`.
    static std::string kallsyms_at(uint64_t xfs_fn) {
        char b[64];
        snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(xfs_fn));
        char e[64];
        snprintf(e, sizeof(e), "%llx", static_cast<unsigned long long>(xfs_fn + 0x80));
        return std::string("ffffffff81000100 T filemap_read\nffffffff81000200 T other\n") + b +
               " t xfs_log_force\t[xfs]\n" + e + " t xfs_next\t[xfs]\n";
    }
    // Resolves twice: the first read fills the cache; the fake kallsyms then
    // moves xfs_log_force, so the second call tells a cache hit (old address)
    // from a fresh read (new address).
    CachedKernelSymbols resolve_after_kallsyms_moved() {
        const auto first = resolve_kernel_symbols_cached(src_, kWanted);
        EXPECT_FALSE(first.from_cache) << first.how;
        EXPECT_NE(first.how.find("cached in"), std::string::npos) << first.how;
        write(src_.kallsyms, kallsyms_at(0xffffffffc0500100));
        return resolve_kernel_symbols_cached(src_, kWanted);
    }
    static uint64_t xfs_start(const CachedKernelSymbols& r) {
        EXPECT_TRUE(r.ranges.has_value());
        for (const auto& x : r.ranges.value_or(std::vector<KernelSymbolRange>{}))
            if (x.name == "xfs_log_force") return x.start;
        return 0;
    }
    // /proc/kallsyms read again, for `why`, and its (moved) ranges used.
    static void expect_read_again(const CachedKernelSymbols& r, const std::string& why) {
        EXPECT_FALSE(r.from_cache);
        EXPECT_NE(r.how.find(why), std::string::npos) << r.how;
        EXPECT_EQ(xfs_start(r), 0xffffffffc0500100ull);
    }
    std::string cache_file() const { return src_.cache_dir + "/" + kKallsymsCacheFile; }

    std::string dir_;
    KallsymsSources src_;
};

}  // namespace

TEST_F(KallsymsCacheTest, SameStateIsServedFromTheCacheWithTheSameRanges) {
    const auto fresh = resolve_kernel_symbols_in_file(src_.kallsyms, kWanted);
    const auto r = resolve_after_kallsyms_moved();
    EXPECT_TRUE(r.from_cache) << r.how;
    ASSERT_TRUE(fresh && r.ranges);
    ASSERT_EQ(r.ranges->size(), fresh->size());
    for (size_t i = 0; i < fresh->size(); ++i) {
        EXPECT_EQ((*r.ranges)[i].start, (*fresh)[i].start);
        EXPECT_EQ((*r.ranges)[i].end, (*fresh)[i].end);
        EXPECT_EQ((*r.ranges)[i].tag, (*fresh)[i].tag);
        EXPECT_EQ((*r.ranges)[i].name, (*fresh)[i].name);
    }
    struct stat st {};
    ASSERT_EQ(stat(src_.cache_dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(KallsymsCacheTest, AnotherBootInvalidates) {
    const auto first = resolve_kernel_symbols_cached(src_, kWanted);
    write(src_.boot_id, "00000000-f483-4707-937b-07f26538020c\n");
    write(src_.kallsyms, kallsyms_at(0xffffffffc0500100));
    const auto r = resolve_kernel_symbols_cached(src_, kWanted);
    expect_read_again(r, "another boot");
}

TEST_F(KallsymsCacheTest, AReloadedModuleInvalidates) {
    const auto first = resolve_kernel_symbols_cached(src_, kWanted);
    write(src_.modules, "xfs 2285568 0 - Live 0xffffffffc0500000\njbd2 200704 1 ext4, Live 0xffffffffc0300000\n");
    write(src_.kallsyms, kallsyms_at(0xffffffffc0500100));
    const auto r = resolve_kernel_symbols_cached(src_, kWanted);
    expect_read_again(r, "another set of loaded modules");
    // ... and the new state is cached in turn.
    EXPECT_TRUE(resolve_kernel_symbols_cached(src_, kWanted).from_cache);
}

TEST_F(KallsymsCacheTest, AnotherWantedSetInvalidates) {
    const auto first = resolve_kernel_symbols_cached(src_, kWanted);
    auto wanted = kWanted;
    wanted["xfs_log_force"] = 4;   // another tag counts too
    write(src_.kallsyms, kallsyms_at(0xffffffffc0500100));
    const auto r = resolve_kernel_symbols_cached(src_, wanted);
    expect_read_again(r, "another set of wanted functions");
}

TEST_F(KallsymsCacheTest, RefcountChangesKeepTheCache) {
    const auto first = resolve_kernel_symbols_cached(src_, kWanted);
    write(src_.modules, "xfs 2285568 7 - Live 0xffffffffc0400000\njbd2 200704 2 ext4,xfs Live 0xffffffffc0300000\n");
    EXPECT_TRUE(resolve_kernel_symbols_cached(src_, kWanted).from_cache);
}

TEST_F(KallsymsCacheTest, ATruncatedOrCorruptCacheIsIgnoredAndRewritten) {
    const auto first = resolve_kernel_symbols_cached(src_, kWanted);
    std::string whole;
    {
        std::ifstream in(cache_file());
        whole.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_FALSE(whole.empty());
    write(src_.kallsyms, kallsyms_at(0xffffffffc0500100));
    // Every truncation, and a range line damaged in a few ways.
    std::vector<std::string> bad;
    for (size_t n = 0; n < whole.size(); ++n) bad.push_back(whole.substr(0, n));
    const auto at = whole.find("\nffffffffc0400100");
    ASSERT_NE(at, std::string::npos);
    for (const char* repl : {"\nffffffffc04z0100", "\nfffffffffc0400100", "\n0"}) {
        std::string b = whole;
        b.replace(at, 17, repl);
        bad.push_back(b);
    }
    bad.push_back(whole + "extra\n");
    std::string swapped = whole;
    swapped.replace(swapped.find(" 3 xfs_log_force"), 16, " 1 xfs_log_force");   // another class
    bad.push_back(swapped);
    for (const auto& b : bad) {
        write(cache_file(), b);
        const auto r = resolve_kernel_symbols_cached(src_, kWanted);
        EXPECT_FALSE(r.from_cache) << "accepted: [" << b << "]";
        EXPECT_EQ(xfs_start(r), 0xffffffffc0500100ull) << b;
        EXPECT_NE(r.how.find("cached in"), std::string::npos) << r.how;   // rewritten with the fresh ranges
        write(src_.kallsyms, kallsyms_at(0xffffffffc0500100));
    }
}

TEST_F(KallsymsCacheTest, NoCacheWhenTheStateCannotBeToldExactly) {
    write(src_.modules, "xfs 2285568 1 - Live 0x0000000000000000\n");   // addresses hidden
    resolve_kernel_symbols_cached(src_, kWanted);
    EXPECT_FALSE(fs::exists(cache_file()));
    write(src_.modules, "xfs 2285568 1 - Loading 0xffffffffc0400000\n");
    const auto r = resolve_kernel_symbols_cached(src_, kWanted);
    EXPECT_NE(r.how.find("Loading"), std::string::npos) << r.how;
    EXPECT_FALSE(fs::exists(cache_file()));
    fs::remove(src_.boot_id);
    write(src_.modules, "xfs 2285568 1 - Live 0xffffffffc0400000\n");
    resolve_kernel_symbols_cached(src_, kWanted);
    EXPECT_FALSE(fs::exists(cache_file()));
}

TEST_F(KallsymsCacheTest, AKernelWithoutModulesIsKeyedByItsBootAlone) {
    fs::remove(src_.modules);
    EXPECT_TRUE(resolve_after_kallsyms_moved().from_cache);
}

TEST_F(KallsymsCacheTest, ADirectoryOthersCanEnterIsNotUsed) {
    fs::create_directory(src_.cache_dir);
    chmod(src_.cache_dir.c_str(), 0755);
    const auto r = resolve_kernel_symbols_cached(src_, kWanted);
    EXPECT_FALSE(r.from_cache);
    EXPECT_NE(r.how.find("mode 0700"), std::string::npos) << r.how;
    EXPECT_EQ(xfs_start(r), 0xffffffffc0400100ull);
    EXPECT_FALSE(fs::exists(cache_file()));
}
