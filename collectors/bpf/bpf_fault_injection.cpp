#include "collectors/bpf/bpf_fault_injection.hpp"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include <spdlog/spdlog.h>

namespace iodiag {

std::optional<std::string> injected_bpf_fault(const std::string& step, std::initializer_list<std::string> names) {
    const char* env = std::getenv(kBpfFaultsEnv);
    if (!env || !*env) return std::nullopt;
    std::istringstream in(env);
    std::string item;
    while (std::getline(in, item, ',')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos || item.substr(0, colon) != step) continue;
        const std::string wanted = item.substr(colon + 1);
        for (const auto& n : names) {
            if (!n.empty() && n == wanted) {
                spdlog::warn("{}: injecting a {} failure for {}", kBpfFaultsEnv, step, wanted);
                return step + " of " + wanted + " made to fail by " + kBpfFaultsEnv;
            }
        }
    }
    return std::nullopt;
}

namespace {

// "tp_btf/block_rq_issue" -> "block_rq_issue"; "tracepoint/sched/sched_switch" -> "sched_switch".
std::string tracepoint_of_section(const char* section) {
    const std::string s = section ? section : "";
    return s.substr(s.rfind('/') + 1);
}

std::optional<std::string> program_fault(const std::string& step, const std::string& skeleton,
                                         const bpf_program* prog) {
    return injected_bpf_fault(step, {skeleton, bpf_program__name(prog),
                                     tracepoint_of_section(bpf_program__section_name(prog))});
}

// The skeleton each program was loaded with: a collector that attaches its
// programs one by one (bpf_program__attach) fails on "attach:<skeleton>" too.
// Collectors start in parallel, hence the lock.
std::mutex skeleton_names_lock;
std::map<const bpf_program*, std::string> skeleton_names;

void remember_skeleton_programs(bpf_object_skeleton* s) {
    std::lock_guard<std::mutex> g(skeleton_names_lock);
    bpf_program* prog;
    bpf_object__for_each_program(prog, *s->obj) skeleton_names[prog] = s->name ? s->name : "";
}

std::string skeleton_of(const bpf_program* prog) {
    std::lock_guard<std::mutex> g(skeleton_names_lock);
    const auto it = skeleton_names.find(prog);
    return it == skeleton_names.end() ? std::string() : it->second;
}

// The first fault asked for `step` on the skeleton or one of its autoloaded programs.
std::optional<std::string> skeleton_fault(const std::string& step, bpf_object_skeleton* s) {
    if (!std::getenv(kBpfFaultsEnv)) return std::nullopt;
    if (auto f = injected_bpf_fault(step, {s->name ? s->name : ""})) return f;
    bpf_program* prog;
    bpf_object__for_each_program(prog, *s->obj) {
        if (!bpf_program__autoload(prog)) continue;
        if (auto f = program_fault(step, s->name ? s->name : "", prog)) return f;
    }
    return std::nullopt;
}

}  // namespace

}  // namespace iodiag

// The link-time wrappers (ld --wrap): calls from iodiag's own code to these
// libbpf functions land here first.
extern "C" {
int __real_bpf_object__load_skeleton(bpf_object_skeleton* s);
int __real_bpf_object__attach_skeleton(bpf_object_skeleton* s);
bpf_link* __real_bpf_program__attach(const bpf_program* prog);

int __wrap_bpf_object__load_skeleton(bpf_object_skeleton* s) {
    if (iodiag::skeleton_fault("load", s)) return -EACCES;
    if (std::getenv(iodiag::kBpfFaultsEnv)) iodiag::remember_skeleton_programs(s);
    return __real_bpf_object__load_skeleton(s);
}

int __wrap_bpf_object__attach_skeleton(bpf_object_skeleton* s) {
    if (iodiag::skeleton_fault("attach", s)) return -ENOENT;
    return __real_bpf_object__attach_skeleton(s);
}

bpf_link* __wrap_bpf_program__attach(const bpf_program* prog) {
    if (std::getenv(iodiag::kBpfFaultsEnv) && iodiag::program_fault("attach", iodiag::skeleton_of(prog), prog)) {
        errno = ENOENT;
        return nullptr;
    }
    return __real_bpf_program__attach(prog);
}
}
