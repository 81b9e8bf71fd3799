#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) from the
test fixtures, the shipped rules and playbooks, and this machine's kernel.

    tests/fuzz/make_seeds.py            # rewrite every corpus from the fixtures
    tests/fuzz/make_seeds.py --capture  # also re-capture the seeds taken from the
                                        # running kernel (kallsyms excerpt,
                                        # timer_list head, taskstats answers; root)

Tree targets take packed trees ("@@ relative/path" headers, tests/fuzz/fuzz_tree.hpp).
Seeds are small on purpose: libFuzzer mutates small inputs much faster, and
large fixture bundles are cut down to a few entries of each kind."""
import argparse
import json
import os
import shutil
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
CORPUS = os.path.join(HERE, "corpus")
CAPTURED = "captured"   # file name prefix of seeds taken from the running kernel


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def pack(tree, prefix="", only=None):
    """Packs the files under `tree` (relative names prefixed with `prefix`);
    `only` filters relative paths by a predicate."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, tree)
        if not filenames and not dirnames:
            entries.append((os.path.join(prefix, rel_dir) + "/", b""))
        for fn in sorted(filenames):
            rel = os.path.normpath(os.path.join(rel_dir, fn))
            if only and not only(rel):
                continue
            if fn == ".keep":   # an empty directory the fixture needs
                entries.append((os.path.join(prefix, os.path.dirname(rel)) + "/", b""))
                continue
            entries.append((os.path.join(prefix, rel), read(os.path.join(dirpath, fn), "rb")))
    out = b""
    for i, (name, content) in enumerate(entries):
        out += b"@@ " + name.encode() + b"\n" + content
        if i + 1 < len(entries):
            out += b"\n"
    return out


def procsys_trees():
    base = os.path.join(FIX, "procsys")
    return [(n, os.path.join(base, n)) for n in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, n))]


def bumped(text):
    """A second snapshot: every number on every line grown by a little, so deltas are non-zero."""
    out = []
    for line in text.splitlines(keepends=True):
        out.append(" ".join(str(int(w) + 7) if w.isdigit() else w for w in line.split(" ")))
    return "".join(out)


def snapshot_seeds(target, rel, two=True):
    """`two`: the target reads "before\n--\nafter" (tests/fuzz/fuzz_target.hpp two_snapshots)."""
    for name, tree in procsys_trees():
        p = os.path.join(tree, rel)
        if os.path.exists(p):
            text = read(p, "rb").decode("latin-1")
            write(target, name, text.encode("latin-1"))
            if two:
                write(target, name + "_two_snapshots", (text + "--\n" + bumped(text)).encode("latin-1"))


def small_bundle(path, exemplars=3, keep_all_metrics=True):
    b = json.load(open(path))
    if not keep_all_metrics:
        b["metrics"] = b["metrics"][:20]
        b["facts"] = b["facts"][:10]
        b["histograms"] = b["histograms"][:4]
    b["exemplars"] = b["exemplars"][:exemplars]
    return b


def with_series(b):
    """The same bundle as schema version 2 with a two-interval series."""
    b = json.loads(json.dumps(b))
    b["schema_version"] = 2
    b["series"] = {
        "start_unix": b["window"]["start_unix"], "interval_s": 1.0, "count": 2,
        "histograms": [{"name": "block.d2c_us", "labels": {"device": "vda"}, "unit": "us",
                        "log2_buckets": [[0, 3, 5], [1, 0, 0, 2]],
                        "provenance": {"kind": "tracepoint", "source": "tracepoint:block:block_rq_complete"}}],
        "values": [{"name": "psi.io_some_pct", "labels": {}, "unit": "pct", "values": [1.5, 0],
                    "provenance": {"kind": "file", "source": "/proc/pressure/io"}}],
    }
    return b


# The longest label a collector writes (engine/evidence/value_bounds.hpp
# kMaxLabelChars: "memory:<path>,blkio:<path>", two paths under PATH_MAX).
MAX_LABEL_CHARS = len("memory:") + 4095 + len(",blkio:") + 4095


def refused_bundle_seeds(base):
    """Bundles no collector writes, which iodiag refuses with their JSON path
    (engine/evidence/value_bounds.hpp): a rate beyond any machine, a negative
    rate, one series many times, a label longer than any a collector writes.
    Seeds of both targets: the fuzzer starts next to the bounds."""
    def seed(name, change):
        b = json.loads(json.dumps(base))
        change(b)
        for target in ("bundle", "replay"):
            write(target, "refused_" + name, json.dumps(b, separators=(",", ":")))

    rate = {"name": "disk.read_iops", "labels": {"device": "sdz"}, "unit": "1/s",
            "provenance": {"kind": "file", "source": "/proc/diskstats"}}
    seed("rate_beyond_any_machine.json", lambda b: b["metrics"].insert(0, dict(rate, value=1.7e308)))
    seed("negative_rate.json", lambda b: b["metrics"].insert(0, dict(rate, value=-5e9)))
    seed("same_series_51_times.json", lambda b: b["metrics"].__setitem__(slice(0, 0), [dict(rate, value=12)] * 51))
    seed("label_longer_than_any.json",
         lambda b: b["metrics"].insert(0, dict(rate, value=12, labels={"device": "v" * (MAX_LABEL_CHARS + 1)})))


def bundle_seeds():
    bdir = os.path.join(FIX, "bundles")
    names = sorted(n for n in os.listdir(bdir) if n.endswith(".json") and n != "expected.json")
    for n in names:
        b = small_bundle(os.path.join(bdir, n), exemplars=2, keep_all_metrics=False)
        write("bundle", n, json.dumps(b, separators=(",", ":")))
        write("bundle", "v2_" + n, json.dumps(with_series(b), separators=(",", ":")))
        # The engine target gets every metric and fact (the rules need them).
        full = small_bundle(os.path.join(bdir, n), exemplars=3)
        write("replay", n, json.dumps(with_series(full), separators=(",", ":")))
    refused_bundle_seeds(with_series(small_bundle(os.path.join(bdir, "slow_device.json"), exemplars=2,
                                                  keep_all_metrics=False)))


def cgroup_file_seeds():
    kinds = {  # parser selector byte (tests/fuzz/targets/cgroup_files.cpp) by file name
        "io.pressure": 0, "memory.pressure": 0, "cpu.pressure": 0,
        "memory.stat": 1, "memory.events": 1,
        "blkio.throttle.read_bps_device": 2, "blkio.throttle.write_bps_device": 2,
        "blkio.throttle.read_iops_device": 2, "blkio.throttle.write_iops_device": 2,
        "io.stat": 3, "io.max": 3, "io.latency": 3,
        "blkio.throttle.io_service_bytes": 4, "blkio.throttle.io_serviced": 4,
        "mounts": 5,
    }
    seen = set()
    for dirpath, _, filenames in os.walk(os.path.join(FIX, "cgroup")):
        for fn in sorted(filenames):
            if fn in kinds:
                data = bytes([kinds[fn]]) + read(os.path.join(dirpath, fn), "rb")
                if data in seen:
                    continue
                seen.add(data)
                rel = os.path.relpath(os.path.join(dirpath, fn), FIX).replace("/", "_")
                write("cgroup_files", rel, data)


def cgroup_name_seeds():
    """The fixture host state with the labels of path_shapes.tsv to name against it."""
    labels = [l.split("\t")[1] for l in read(os.path.join(FIX, "cgroup", "path_shapes.tsv")).splitlines()
              if l and not l.startswith("#")]
    tree = pack(os.path.join(FIX, "cgroup", "hoststate"), only=lambda r: r != "README.md")
    write("cgroup_names", "hoststate", tree + b"\n@@ labels\n" + "\n".join(labels).encode())


def yaml_seeds(target, directory):
    for n in sorted(os.listdir(directory)):
        if n.endswith(".yaml"):
            write(target, n, read(os.path.join(directory, n), "rb"))


def site_config_seeds():
    """The example of the documented site configuration (docs/operations.md), and a few variants."""
    readme = read(os.path.join(ROOT, "docs", "operations.md"))
    start = readme.find("## Site configuration")
    block = readme[readme.find("```yaml", start) + len("```yaml\n"):]
    example = block[:block.find("```")]
    write("site_config", "readme_example.yaml", example)
    write("site_config", "devices.yaml", "devices:\n  vda: {class: nvme}\n  /dev/nvme0n1:\n"
          "    read_latency_ms: 2\n    write_latency_ms: 5\n")
    write("site_config", "rules.yaml", "rules:\n  device.saturated: {disable: true}\n"
          "  device.slow_for_class:\n    severity: critical\n    thresholds:\n      disk.read_await_ms: 20\n")
    write("site_config", "history.yaml", "history:\n  state_dir: /var/lib/iodiag\n  nights: 7\n  keep: 30\n"
          "  max_bytes: 128MiB\n")


def proc_io_seeds():
    """A writer, a kernel thread (PF_KTHREAD: skipped) and a process whose io is unreadable."""
    stat = "{pid} ({comm}) S 1 {pid} {pid} 0 -1 {flags} 100 0 0 0 5 3 0 0 20 0 1 0 100 1000 50\n"
    io = "rchar: 4096\nwchar: 8192\nsyscr: 3\nsyscw: 2\nread_bytes: 0\nwrite_bytes: {wb}\ncancelled_write_bytes: 0\n"
    entries = [("proc/4242/stat", stat.format(pid=4242, comm="postgres", flags=4194560)),
               ("proc/4242/io", io.format(wb=1 << 20)), ("proc/4242/comm", "postgres\n"),
               ("proc/17/stat", stat.format(pid=17, comm="kworker/u4:2", flags=0x04208060)),
               ("proc/17/io", io.format(wb=1 << 30)), ("proc/17/comm", "kworker/u4:2\n"),
               ("proc/99/stat", stat.format(pid=99, comm="a) b", flags=4194304)), ("proc/99/comm", "a) b\n"),
               ("proc/self/io", io.format(wb=1))]
    write("proc_io", "writers", b"\n".join(b"@@ " + n.encode() + b"\n" + c.encode() for n, c in entries))


WANTED_SYMBOLS = ["blk_mq_get_tag", "folio_wait_bit_common", "jbd2_log_wait_commit", "xlog_wait_on_iclog",
                  "rwsem_down_write_slowpath", "__mutex_lock", "io_schedule", "balance_dirty_pages"]


def capture():
    # kallsyms: every wanted symbol with its neighbours (the next one gives its end).
    lines = read("/proc/kallsyms").splitlines()
    keep = set()
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) >= 3 and parts[2].split(".")[0] in WANTED_SYMBOLS:
            keep.update(range(max(0, i - 1), min(len(lines), i + 3)))
    write("kallsyms", CAPTURED + "_kallsyms", "\n".join(lines[i] for i in sorted(keep)) + "\n")
    # timer_list: the head (now, jiffies of the first CPU).
    tl = read("/proc/timer_list").splitlines()
    head = [l for l in tl[:8]] + [l for l in tl if l.startswith("jiffies:")][:1]
    write("kernel_hz", CAPTURED + "_timer_list", "\n".join(head) + "\n")
    # taskstats answers: generic netlink, as the delay-accounting collector asks.
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)   # NETLINK_GENERIC
    s.bind((0, 0))

    def msg(typ, cmd, attrs):
        payload = struct.pack("BBH", cmd, 1, 0) + attrs
        return struct.pack("=IHHII", 16 + len(payload), typ, 1, 1, 0) + payload

    def attr(t, data):
        n = 4 + len(data)
        return struct.pack("=HH", n, t) + data + b"\0" * ((4 - n % 4) % 4)

    s.send(msg(16, 3, attr(2, b"TASKSTATS\0")))   # GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME
    r = s.recv(8192)
    family, p = None, 20
    while p + 4 <= len(r):
        n, t = struct.unpack_from("=HH", r, p)
        if t == 1 and n >= 6:
            family = struct.unpack_from("=H", r, p + 4)[0]
        if n < 4:
            break
        p += (n + 3) & ~3
    if family is None:
        sys.exit("make_seeds: no TASKSTATS family (kernel without CONFIG_TASKSTATS?)")
    for name, attr_type, pid in (("tgid", 2, os.getpid()), ("pid", 1, os.getpid()), ("error", 2, 2**31 - 1)):
        s.send(msg(family, 1, attr(attr_type, struct.pack("=I", pid))))   # TASKSTATS_CMD_GET
        write("taskstats", CAPTURED + "_" + name, s.recv(8192))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", action="store_true", help="re-capture the seeds taken from the running kernel")
    args = ap.parse_args()
    # Keep the captured seeds unless asked to re-capture them.
    for target in sorted(os.listdir(CORPUS)) if os.path.isdir(CORPUS) else []:
        d = os.path.join(CORPUS, target)
        for n in os.listdir(d):
            if args.capture or not n.startswith(CAPTURED):
                os.remove(os.path.join(d, n))
    if args.capture:
        capture()

    snapshot_seeds("diskstats", "proc/diskstats")
    snapshot_seeds("vmstat", "proc/vmstat")
    snapshot_seeds("meminfo", "proc/meminfo", two=False)
    snapshot_seeds("psi", "proc/pressure/io")
    snapshot_seeds("zoneinfo", "proc/zoneinfo", two=False)
    for name, tree in procsys_trees():
        write("dirty_limits", name, pack(tree, only=lambda r: r.startswith("proc/") and "pressure" not in r
                                         and r != "proc/diskstats"))
        write("block_queue_config", name, pack(tree, only=lambda r: r.startswith("sys/")))
    for name in ("hybrid", "v2"):
        write("cgroup_tree", name, pack(os.path.join(FIX, "cgroup", name)))
    cgroup_file_seeds()
    cgroup_name_seeds()
    for d in ("on",):
        base = os.path.join(FIX, "delayacct", d, "proc")
        for pid in sorted(os.listdir(base)):
            if pid.isdigit():
                write("delayacct_stat", "pid_" + pid, read(os.path.join(base, pid, "stat"), "rb"))
    nv = os.path.join(FIX, "nvme_smart")
    identify = read(os.path.join(nv, "identify_ctrl.bin"), "rb")
    for n in sorted(os.listdir(nv)):
        if n.endswith(".bin") and n != "identify_ctrl.bin":
            page = read(os.path.join(nv, n), "rb")
            write("nvme_smart_log", n, page + (identify if len(page) == 512 else b""))
    write("nvme_smart_collector", "fixture", pack(os.path.join(nv, "sysroot"), "sysroot") + b"\n" +
          pack(os.path.join(nv, "admin"), "admin"))
    write("kernel_hz", "config", "# Kernel configuration\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    bundle_seeds()
    yaml_seeds("rules", os.path.join(ROOT, "rules"))
    site_config_seeds()
    proc_io_seeds()
    yaml_seeds("playbook", os.path.join(ROOT, "playbooks"))
    for target in sorted(os.listdir(CORPUS)):
        print(f"{target}: {len(os.listdir(os.path.join(CORPUS, target)))} seeds")


if __name__ == "__main__":
    main()
