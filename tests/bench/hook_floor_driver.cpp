// Attaches tests/bench/hook_floor.bpf.c's empty programs on the tracepoints
// of the chosen groups (block, iouring, sched, syscall-events, syscall-raw;
// default: the hooks iodiag attaches where every tracepoint exists, i.e. all
// but syscall-raw) and waits for SIGTERM/SIGINT: the "floor" modes of
// tests/bench/overhead.py and tests/bench/non_io_tax.py. A program whose
// tracepoint is missing or refuses it is reported and skipped.
//
//   iodiag_bench_hook_floor [--group block|iouring|sched|syscall-events|syscall-raw ...]
#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <bpf/libbpf.h>
#include <CLI/CLI.hpp>

#include "collectors/bpf/syscall_bpf_classes.hpp"
#include "hook_floor.skel.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// The group a program belongs to, by its name.
std::string group_of(const std::string& prog) {
    if (prog.rfind("floor_event_", 0) == 0) return "syscall-events";
    if (prog.rfind("floor_raw_", 0) == 0) return "syscall-raw";
    const std::string name = prog.rfind("floor_", 0) == 0 ? prog.substr(6) : "block";   // the clock probe: block
    return name.substr(0, name.find('_'));
}

// Links of one program: its own tracepoint, or (the per-syscall group) the
// enter or exit event of every syscall the syscall collector times.
std::vector<bpf_link*> attach(bpf_program* prog) {
    const std::string name = bpf_program__name(prog);
    if (group_of(name) != "syscall-events") {
        bpf_link* l = bpf_program__attach(prog);
        if (!l) std::cerr << name << ": not attached: " << std::strerror(errno) << "\n";
        return l ? std::vector<bpf_link*>{l} : std::vector<bpf_link*>{};
    }
    const std::string side = name == "floor_event_sys_enter" ? "sys_enter_" : "sys_exit_";
    std::vector<bpf_link*> links;
    for (const auto& sys : iodiag::syscall_bpf::syscall_names()) {
        bpf_link* l = bpf_program__attach_tracepoint(prog, "syscalls", (side + sys).c_str());
        if (!l) std::cerr << name << " on syscalls:" << side << sys << ": not attached: " << std::strerror(errno) << "\n";
        else links.push_back(l);
    }
    return links;
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Empty BPF programs on iodiag's tracepoints (the overhead benchmarks' floor)"};
    std::vector<std::string> groups;
    app.add_option("--group", groups, "block, iouring, sched, syscall-events or syscall-raw (repeatable); "
                                      "default: all but syscall-raw")
        ->check(CLI::IsMember({"block", "iouring", "sched", "syscall-events", "syscall-raw"}));
    CLI11_PARSE(app, argc, argv);
    if (groups.empty()) groups = {"block", "iouring", "sched", "syscall-events"};
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    hook_floor_bpf* skel = hook_floor_bpf__open();
    if (!skel) {
        std::cerr << "open: " << std::strerror(errno) << "\n";
        return 1;
    }
    bpf_program* prog;
    bpf_object__for_each_program(prog, skel->obj) {
        const std::string g = group_of(bpf_program__name(prog));
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) bpf_program__set_autoload(prog, false);
    }
    if (int err = hook_floor_bpf__load(skel); err) {
        std::cerr << "load: " << std::strerror(-err) << "\n";
        hook_floor_bpf__destroy(skel);
        return 1;
    }
    std::vector<bpf_link*> links;
    bpf_object__for_each_program(prog, skel->obj) {
        if (!bpf_program__autoload(prog)) continue;
        for (auto* l : attach(prog)) links.push_back(l);
    }
    std::cerr << links.size() << " links attached\n";
    while (!g_stop) pause();
    for (auto* l : links) bpf_link__destroy(l);
    hook_floor_bpf__destroy(skel);
    return links.empty() ? 3 : 0;
}
