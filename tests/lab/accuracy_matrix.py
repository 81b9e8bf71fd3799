#!/usr/bin/python3
"""Accuracy matrix: iodiag's verdict on randomized real faults, against ground truth that is not iodiag.

    sudo tests/lab/accuracy_matrix.py [--draws N] [--control-draws M] [--seed S] [--only CLASS,...]
                                      [--secs S] [--keep DIR] [--json OUT] [--rejudge DIR]

Every scenario class of tests/lab/draws.py is a generator: each draw picks the
class's parameters at random (seeded: draw i of a run with --seed S uses seed
S*1000+i, printed with the draw), injects the fault for real with
tests/lab/scenario.sh, records iodiag's bundle and, over the same window, the
ground truth (tests/lab/ground_truth.bt: bpftrace on tracepoints, the victim
processes' syscall time and what each mechanism took of it; nothing of
iodiag's collectors). Each fault draw is run a second time without its fault
(IODIAG_LAB_FAULT=0, ground truth only) for the victims' unfaulted baseline.

What a draw expects is decided by its ground truth, never by its class's name:
its cause is the mechanism (ground_truth.mechanisms) with the largest share
of all of the victims' syscall time among those the class can inject, and the
rules that name that mechanism (MECHANISM_RULES) are the right top-1. A draw
is scored when that cause is material: it holds 50 % or more of the victims'
time and the victims ran 1.5x or more slower than their baseline; else it is
reported as weak (the injected fault did not slow the victims materially).
The verdict is the bundle's replay (`iodiag replay --format json`).

The contention classes (neighbor_*, issue 23) split the victims' device,
queue and CPU waits by whose use of the resource they waited behind
(ground_truth.mechanisms(split_neighbors=True)): their cause is "neighbor"
when the others' part is the largest, and then the first finding must also
name the neighbor the ground truth found (its command, and the unit of the
cgroup the scenario put it in).

Who suffered, and who caused it (issue 33): the ground truth also measures
each victim process (its syscall time, and each mechanism's part of it) and
who loaded what they waited for; tests/lab/procs.py samples every process's
command line over the window. A victim is a process of the victims' cgroup
with 5 % or more of their time that ran 1.5x or more slower (its mean
syscall latency against its program's in the unfaulted run); the culprit, in
the classes with a neighbor (Klass.culprit), is the other process with the
most device time on the victims' devices while a victim's request was in
flight (the flusher's and the journal's counted for the processes whose
data they wrote), or the most CPU time while a victim waited for a CPU. On
every draw where a victim ran 1.5x slower, scored whether or not its cause
was material: the verdict's who_suffered.pid (or its cmdline, where the
verdict gives one) must be a victim's pid or command line, and its
caused_by.pid (before caused_by: the first finding's *neighbor_pid evidence)
the culprit's pid or command line (a shell loop's dd is a new process each
pass, fio's jobs are processes of one command line). A draw whose verdict
names nobody is "not named", a miss. And no STATUS OK where a victim ran
1.5x slower with half its time or more in one of the class's mechanisms.

Scored: top-1 right when the status is warning or critical AND the first
finding (not a note) names the cause; share right when that finding's share is
within 15 points of the ground truth over the same syscalls (its share
metric's basis: the suffering application's slow syscalls, the window's slow
set, or all of them). Controls: quiet when nothing above info was found.
Never OK: no scored draw may print STATUS OK.

Prints a line per draw and a table per class. Needs root, fio, bpftrace,
mkfs.*, python3-fusepy, PostgreSQL, redis-server; a draw whose scenario cannot
run on this machine (scenario.sh exits 77: a kernel without bfq, a missing
server) is reported as skipped with the reason, and not counted. The scenario
script takes the machine lock per run.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import draws
import ground_truth as gt_lib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARE_TOLERANCE = 15.0
MATERIAL_SHARE_PCT = 50.0
MATERIAL_SLOWDOWN = 1.5
REJUDGE_DIR = ""
CULPRIT_CLASSES = {k.name for k in draws.CLASSES if k.culprit}

# The rules that name each mechanism; "rule@layer" for the judgement model's
# per-layer finding (judgement.dominant_layer), whose instance is a layer.
MECHANISM_RULES = {
    "device": {"device.dominant_no_reference", "device.slow_for_class", "device.stall_tail", "block.device_d2c_tail",
               "device.hdd_seek_bound", "device.saturated", "cgroup.limit_below_stacked_device",
               "judgement.dominant_layer@device", "judgement.dominant_layer@page_cache"},
    "queue": {"block.tag_wait_dominant", "block.scheduler_queueing_dominant", "block_queue.bfq_idling_fast_device",
              "block_queue.nr_requests_tiny", "judgement.dominant_layer@block_queue"},
    # contention.cpu_neighbor: the run-queue delay with the processes that held the CPUs
    "cpu": {"syscall.runqueue_delay", "judgement.dominant_layer@cpu", "contention.cpu_neighbor"},
    "lock": {"syscall.lock_contention", "judgement.dominant_layer@locks"},
    "dirty": {"syscall.dirty_throttling_dominant", "dirty.writers_throttled", "judgement.dominant_layer@dirty",
              "settings.dirty_limit_low"},
    "held": {"cgroup.io_limit_reached", "syscall.cgroup_io_control", "cgroup.limit_below_stacked_device",
             "judgement.dominant_layer@cgroup"},
    "fsync": {"syscall.journal_dominant", "syscall.xfs_log_force_dominant", "syscall.btrfs_log_sync_dominant",
              "syscall.fsync_chain", "syscall.journal_commit_slow", "judgement.dominant_layer@journal",
              "contention.journal_neighbor"},   # the chain, with whose data the commits carried
    # Others held what the victims waited for (ground_truth.mechanisms(split_neighbors=True)):
    # the contention rules, and the judgement model's layer finding, which says the layer
    # serves mostly other programs and names the largest.
    # settings.wbt_off_under_writeback is the device contention finding where the others' load
    # is writeback and writeback throttling is off (it supersedes contention.device_neighbor,
    # names the neighbor and has the same share): the same cause, with the setting that let it.
    "neighbor": {"contention.device_neighbor", "contention.slow_device_neighbor", "contention.cpu_neighbor",
                 "contention.journal_neighbor", "settings.wbt_off_under_writeback",
                 "judgement.dominant_layer@device", "judgement.dominant_layer@block_queue",
                 "judgement.dominant_layer@cpu"},
}

# Shares over the suffering application's own slow syscalls (attr.sufferer.*,
# judge.share_pct, and a device's share of that wait); over ALL of an
# application's syscalls (device.submitter_*, attr.sufferer.cpu_all_pct); the
# others over the window's slow set.
APP_BASIS_SHARES = ("attr.sufferer.", "judge.share_pct", "device.slow_share_pct", "device.io_wait_share_pct",
                    "device.scheduler_wait_share_pct", "device.contention_share_pct")
ALL_BASIS_SHARES = ("attr.sufferer.cpu_all_pct", "device.submitter_", "cpu.contention_share_pct")


def rule_key(finding):
    if finding["rule_id"] == "judgement.dominant_layer":
        return f"judgement.dominant_layer@{finding['instance']}"
    return finding["rule_id"]


def thresholds_of(bundle):
    """The thresholds of iodiag's share bases in this bundle: the window's slow
    set (attr.slow.threshold_us) and the suffering application's own slow
    syscalls (attr.app.basis_us, when the collector measured its own shares)."""
    found = {}
    with open(bundle) as f:
        for m in json.load(f).get("metrics", []):
            if m.get("name") in ("attr.slow.threshold_us", "attr.app.basis_us", "attr.app.ops") and not m.get("labels"):
                found[m["name"]] = float(m["value"])
    return {"slow": found.get("attr.slow.threshold_us", 0.0),
            "app": found.get("attr.app.basis_us", 0.0) if "attr.app.ops" in found else 0.0}


def basis_view(res, finding):
    """The ground truth over the syscalls the finding's share is of (see
    share_threshold_us), or all of it when none reached that threshold."""
    return gt_lib.view(res["gt"], share_threshold_us(finding, res["thresholds"])) or res["gt"]


def share_threshold_us(finding, thresholds):
    metric = (finding or {}).get("share_metric") or ""
    if metric.startswith(ALL_BASIS_SHARES):
        return 1.0
    if thresholds.get("app") and metric.startswith(APP_BASIS_SHARES):
        return thresholds["app"]
    return thresholds.get("slow", 0.0)


class Skipped(RuntimeError):
    """The scenario cannot run on this machine (exit 77): not an error of iodiag's."""


def run_scenario(iodiag, klass, p, secs, out_dir, tag, fault=True, baseline_only=False):
    """Runs one scenario; returns (bundle or None, ground truth path) or raises RuntimeError."""
    bundle = os.path.join(out_dir, tag + ".json")
    gt_path = os.path.join(out_dir, tag + ".gt.json")
    env = dict(os.environ, IODIAG_LAB_GT=gt_path, IODIAG=iodiag, IODIAG_LAB_FAULT="1" if fault else "0",
               IODIAG_LAB_BASELINE="1" if baseline_only else "0")
    for k, v in p.items():
        env["IODIAG_LAB_" + k] = str(v)
    env.pop("IODIAG_LIVE_LOCK_HELD", None)   # scenario.sh takes the lock for this run only
    # No hard kill: a scenario waiting for the machine lock may wait long, and a
    # killed scenario could not undo its changes. SIGTERM runs its cleanup.
    proc = subprocess.Popen([os.path.join(HERE, "scenario.sh"), klass.scenario, bundle, str(secs)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.communicate()
        raise RuntimeError("timed out (machine lock held elsewhere?)")
    if proc.returncode == 77:   # what the scenario needs is not on this machine (a scheduler, a tool)
        raise Skipped(((err or out).strip().splitlines() or ["skipped"])[-1])
    if proc.returncode != 0:
        raise RuntimeError(((err or out).strip().splitlines() or ["scenario failed"])[-1])
    return (None if baseline_only else bundle), gt_path


def replay(iodiag, bundle):
    v = subprocess.run([iodiag, "replay", bundle, "--format", "json"], capture_output=True, text=True)
    if v.returncode != 0:
        raise RuntimeError(v.stderr.strip() or "replay failed")
    return json.loads(v.stdout)


def read_cgroups(path):
    """The cgroups a scenario made for its neighbor: {cgroup id: path}."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(line.split(None, 1) for line in f.read().splitlines() if " " in line)


def load_truth(path):
    """A run's ground truth and its process sample (tests/lab/procs.py), {} when not recorded."""
    gt = gt_lib.parse_bpftrace_json(path) if os.path.exists(path) else {}
    return gt, gt_lib.read_procs(path + ".procs")


def run_draw(a, klass, seed):
    """Records (or, with --rejudge, reloads) one draw: its verdict, ground truth and baseline."""
    p = klass.draw(seed)
    tag = f"{klass.name}_{seed}"
    out_dir = REJUDGE_DIR or a.keep or tempfile.mkdtemp(prefix="iodiag-matrix-")
    try:
        if REJUDGE_DIR:
            bundle, gt_path = os.path.join(out_dir, tag + ".json"), os.path.join(out_dir, tag + ".gt.json")
            if not os.path.exists(bundle):
                return None
        else:
            bundle, gt_path = run_scenario(a.iodiag, klass, p, a.secs, out_dir, tag)
            if not klass.control and not klass.special:
                run_scenario(a.iodiag, klass, p, max(2, a.secs - 1), out_dir, tag + ".base", fault=False,
                             baseline_only=True)
        base_path = os.path.join(out_dir, tag + ".base.gt.json")
        (gt, procs), (base, base_procs) = load_truth(gt_path), load_truth(base_path)
        if "CAP_MBPS" in p:   # the capped volume: the neighbor split by service, not D2C
            gt = gt_lib.weigh_by_service(gt, float(p["CAP_MBPS"]))
        res = {"params": p, "verdict": replay(a.iodiag, bundle), "thresholds": thresholds_of(bundle),
               "gt": gt, "base": base, "procs": procs, "base_procs": base_procs,
               "cgroups": read_cgroups(gt_path + ".cgroups")}
    except Skipped as e:
        return {"params": p, "skipped": str(e)}
    except RuntimeError as e:
        return {"params": p, "error": str(e)}
    finally:
        if not a.keep and not REJUDGE_DIR:
            shutil.rmtree(out_dir, ignore_errors=True)
    return res


def first_finding(verdict):
    return (verdict.get("findings") or [None])[0]


# ---- the draws with two causes (one run, two applications or two victims) ----

def two_apps_truth(gt, device):
    """Each cause's share of its own application's time (the writer calls
    pwrite64 only, the reader pread64 only), and the time each cost."""
    own = lambda nr: float(gt.get("@nr_ns", {}).get(nr, 0))
    dirty_ns = float(gt.get("@dirty_ns", 0) or 0)
    reads = own(gt_lib.NR_PREAD64)
    if device:
        second = gt_lib.total(gt.get("@v_d2c_ns", {}))
    else:
        second = max(0.0, reads - gt_lib.total(gt.get("@v_q2c_ns", {})) - gt_lib.rq_of(gt, gt_lib.NR_PREAD64))
    pct = lambda part, whole: None if whole <= 0 else max(0.0, min(100.0, 100.0 * part / whole))
    key = "device" if device else "held"
    return ({"dirty": pct(dirty_ns, own(gt_lib.NR_PWRITE64)), key: pct(second, reads)},
            {"dirty": dirty_ns, key: second})


def judge_special(klass, res, row):
    v = res["verdict"]
    t = first_finding(v)
    slow = basis_view(res, t)
    # two_causes' writer and reader are two fio command lines (--name=w,
    # --name=r): since issue 33 two applications, each judged on its own
    # time, so each cause's share is of its own application's, as in two_apps.
    truth, cost = two_apps_truth(slow, klass.special == "two_apps_device")
    bigger = max((k for k in cost if cost[k] is not None), key=lambda k: cost[k], default=None)
    other = next((k for k in cost if k != bigger), None)
    later = [rule_key(f) for f in v.get("findings", [])[1:]]
    second = any(r in MECHANISM_RULES.get(other, set()) for r in later)
    row["cause"] = f"{bigger} (and {other}, ranked below: {'yes' if second else 'NO'})"
    row["gt"] = truth.get(bigger)
    row["scored"] = True
    row["top_ok"] = bool(t) and v.get("status") in ("warning", "critical") and second and \
        rule_key(t) in MECHANISM_RULES.get(bigger, set())
    row["share_ok"] = row["top_ok"] and row["share"] is not None and row["gt"] is not None and \
        abs(row["share"] - row["gt"]) <= SHARE_TOLERANCE
    return row


# ---- the contention classes (issue 23) ----

# A contention finding's share is the part of the application's wait that
# others' use of the resource caused (docs/contention.md): it is compared with
# the ground truth's split of that wait.
CONTENTION_PARTS = {"contention.device_neighbor": "neighbor_device", "contention.slow_device_neighbor": "neighbor_device",
                    "contention.cpu_neighbor": "neighbor_cpu"}


def truth_part(cause, finding, mech):
    """The ground truth to compare a finding's share with: a contention
    finding's, the others' part of its resource whatever the cause (a CPU hog
    is a neighbor in cpu_contention too); for a neighbor, the part of the
    resource the finding is about (a device's or the CPUs'), else the larger
    part (a commit chain's, for the journal neighbor); any other cause as it
    is."""
    rule = (finding or {}).get("rule_id")
    if rule in CONTENTION_PARTS:
        return CONTENTION_PARTS[rule]
    # The commit chain is one wait: in a contention class the neighbor's part
    # of it is what it took beyond the victims' unfaulted time (the device
    # split sees only their own requests); where the class's cause is the
    # chain itself (fsync_storm, db_commits), the chain.
    if rule == "contention.journal_neighbor":
        return "neighbor_journal" if cause == "neighbor" else cause
    if cause != "neighbor":
        return cause
    layer = (finding or {}).get("layer") or (finding or {}).get("instance")
    if layer in ("device", "block_queue"):
        return "neighbor_device"
    if layer == "cpu":
        return "neighbor_cpu"
    return max(("neighbor_device", "neighbor_cpu"), key=lambda k: mech.get(k) or 0)


def names_the_neighbor(finding, res, mech):
    """Whether the first finding's title names who the ground truth found
    holding most of what the victims waited for: its command (the writeback
    flusher, a kworker to the kernel, is "writeback" to iodiag) and, where the
    scenario put it in a cgroup of its own (IODIAG_LAB_GT.cgroups: the
    ground truth's cgroup id and its path), the last part of that path, which
    is the name of a systemd unit's cgroup."""
    dev_f, dev_comm, cpu_f, cpu_comm = gt_lib.neighbors(res["gt"])
    comm = dev_comm if (mech.get("neighbor_device") or 0) >= (mech.get("neighbor_cpu") or 0) else cpu_comm
    want = ["writeback" if comm.startswith("kworker") else comm]
    cg_id = str(res["gt"].get("@w_o_cg", {}).get(comm, ""))
    path = res.get("cgroups", {}).get(cg_id)
    if path:
        want.append(path.rsplit("/", 1)[-1])
    title = (finding or {}).get("title", "")
    return {"who": " in ".join(want), "ok": bool(comm) and all(w and w in title for w in want)}


# ---- who suffered and who caused it (issue 33) ----

def named_victim(verdict):
    """Whom the verdict names as who suffered: who_suffered {pid, cmdline, comm}."""
    w = verdict.get("who_suffered") or {}
    if isinstance(w, list):   # a list of sufferers, the first the one that suffered most
        w = w[0] if w else {}
    return {"pid": str(w.get("pid") or ""), "cmdline": w.get("cmdline") or "",
            "comm": w.get("comm") or w.get("app") or ""}


def named_culprit(verdict):
    """Whom the verdict names as the cause: its caused_by {pid, cmdline, comm};
    before that field, the first finding's evidence *neighbor_pid and
    *neighbor_comm (the contention rules' facts)."""
    c = verdict.get("caused_by") or (first_finding(verdict) or {}).get("caused_by")
    if isinstance(c, list):
        c = c[0] if c else None
    if c:
        return {"pid": str(c.get("pid") or ""), "cmdline": c.get("cmdline") or "", "comm": c.get("comm") or ""}
    found = {"pid": "", "cmdline": "", "comm": ""}
    for e in (first_finding(verdict) or {}).get("evidence", []):
        name = e.get("name", "")
        if name.endswith("neighbor_pid") and not found["pid"]:
            found["pid"] = str(e.get("value") or "")
        elif name.endswith("neighbor_comm") and not found["comm"]:
            found["comm"] = str(e.get("value") or "")
    return found


def naming(named, truth, procs, starters=()):
    """Whether a named process is one of the ground truth's ({pid, cmdline}
    each): the same pid, or the same command line (the verdict's, else the
    one sampled for the named pid), or one of starters (pids). None when the
    verdict named no process."""
    if not named["pid"] and not named["cmdline"]:
        return None
    if named["pid"] in {t["pid"] for t in truth} or named["pid"] in starters:
        return True
    cmdline = named["cmdline"] or procs.get(named["pid"], {}).get("cmdline", "")
    return bool(cmdline) and cmdline in {t["cmdline"] for t in truth if t["cmdline"]}


def ancestors(pid, procs):
    """pid's parent, its parent's, ... as far as the sample knows them."""
    out, seen = [], {pid}
    while True:
        pid = procs.get(pid, {}).get("ppid", "")
        if not pid or pid in seen or pid not in procs:
            return out
        out.append(pid)
        seen.add(pid)


def starters(culprit_pids, victim_pids, procs):
    """The processes that started the culprit and not the victims: the shell
    loop or script whose dd it is (named for it, it is the culprit as people
    see it: a dd's pid is gone at the next pass), not the lab's shell above both."""
    shared = {a for v in victim_pids for a in ancestors(v, procs)}
    return {a for c in culprit_pids for a in ancestors(c, procs)} - shared - set(victim_pids)


def judge_who(klass, res, row):
    """The victim and culprit columns, and the per-victim never-OK check."""
    gt, procs = res["gt"], res.get("procs", {})
    if "@p_ops" not in gt:   # recorded before the per-process ground truth
        return row
    everyone = gt_lib.victims(gt, procs, res["base"], res.get("base_procs", {}))
    slowed = [v for v in everyone if v["slowdown"] is not None and v["slowdown"] >= MATERIAL_SLOWDOWN]
    split = "neighbor" in klass.candidates
    for v in slowed:
        mech = gt_lib.mechanisms(gt_lib.process_view(gt, v["pid"]), split, v["slowdown"])
        cands = {m: s for m, s in mech.items() if m in klass.candidates and s is not None}
        v["mechanism"] = max(cands, key=cands.get) if cands else None
        v["mechanism_pct"] = cands.get(v["mechanism"])
    row["victims"] = slowed
    row["victim_slowdown"] = max((v["slowdown"] for v in everyone if v["slowdown"]), default=None)
    row["who_scored"] = bool(slowed)
    # A victim 1.5x slower with half its time in one mechanism: the verdict must not be OK.
    row["material_victims"] = [v["pid"] for v in slowed if (v["mechanism_pct"] or 0) >= MATERIAL_SHARE_PCT]
    if not slowed:
        return row
    verdict = res["verdict"]
    row["victim_named"] = named_victim(verdict)
    row["victim_ok"] = naming(row["victim_named"], slowed, procs)
    if klass.culprit:
        truth = gt_lib.culprit(gt, procs, cpu=klass.culprit == "cpu")
        row["culprit"] = truth
        if truth:
            # Every process of the culprit's command line is the culprit (fio's jobs, a loop's dd).
            same = [{"pid": p, "cmdline": i["cmdline"]} for p, i in procs.items()
                    if truth["cmdline"] and i.get("cmdline") == truth["cmdline"]]
            row["culprit_named"] = named_culprit(verdict)
            started = starters([truth["pid"]] + [s["pid"] for s in same], list(gt.get("@p_ops", {})), procs)
            row["culprit_ok"] = naming(row["culprit_named"], [truth] + same, procs, started)
            row["culprit_by_starter"] = row["culprit_named"]["pid"] in started
    return row


# ---- settings as causes (issue 34) ----

# The rules that name each setting.
SETTING_RULES = {"readahead": {"settings.readahead_off_sequential"}, "sync_mount": {"settings.sync_writes"},
                 "dirsync": {"settings.dirsync_creates"},
                 "nr_requests": {"block_queue.nr_requests_tiny"}, "ioprio_idle": {"settings.ioprio_idle"},
                 "max_sectors": {"settings.max_sectors_small"}, "data_journal": {"settings.data_journal_writes"},
                 "discard": {"settings.discard_slow"}}
# The draw parameter that holds the setting's value, and how a finding shows it.
SETTING_VALUE = {"readahead": lambda p: f"{p['RA_KB']} KiB", "sync_mount": lambda p: "mounted sync",
                 "dirsync": lambda p: "dirsync",
                 "nr_requests": lambda p: f"nr_requests is {p['NR']} ",
                 "ioprio_idle": lambda p: "idle I/O priority class",
                 "max_sectors": lambda p: f"max_sectors_kb is {p['MAX_KB']} KiB",
                 "data_journal": lambda p: "data=journal", "discard": lambda p: "mounted discard"}


def judge_setting(klass, res, row):
    """A setting's draw: its cause is the setting where the victims ran at
    least MATERIAL_SLOWDOWN slower than the same workload with the default
    setting (the baseline run); the part of their time the setting cost is
    1 - baseline mean / mean. The first finding must be the setting's rule at
    warning or critical, with the value the draw set in its title."""
    v, t = res["verdict"], first_finding(res["verdict"])
    base_mean, mean = gt_lib.mean_latency_us(res["base"]), gt_lib.mean_latency_us(res["gt"])
    slowdown = mean / base_mean if mean and base_mean else None
    # A busy machine's own CPU wait (the run queue) is not the setting's: where
    # it holds most of the victims' time, that is the draw's cause.
    cpu = gt_lib.mechanisms(gt_lib.everything(res["gt"])).get("cpu") or 0
    cause = None
    if slowdown and slowdown >= MATERIAL_SLOWDOWN:
        cause = "cpu" if cpu >= MATERIAL_SHARE_PCT else "setting"
    row.update({"cause": cause, "slowdown": slowdown})
    row["gt"] = cpu if cause == "cpu" else (100.0 * (1 - base_mean / mean) if slowdown else None)
    row["cause_all"] = row["gt"]
    row["scored"] = cause is not None
    value = SETTING_VALUE[klass.setting](res["params"])
    if cause == "cpu":
        right = rule_key(t) in MECHANISM_RULES["cpu"] if t else False
    else:
        right = bool(t) and rule_key(t) in SETTING_RULES[klass.setting] and value in t.get("title", "")
    row["top_ok"] = bool(t) and v.get("status") in ("warning", "critical") and right
    row["share_ok"] = row["top_ok"] and row["share"] is not None and row["gt"] is not None and \
        abs(row["share"] - row["gt"]) <= SHARE_TOLERANCE
    return row


def judge(klass, res, seed):
    v = res["verdict"]
    t = first_finding(v)
    row = {"class": klass.name, "seed": seed, "params": res["params"], "status": v.get("status"),
           "top1": f"{t['rule_id']}@{t['instance']}" if t else "-", "share": t.get("share_pct") if t else None,
           "control": klass.control}
    if klass.control:
        row["top_ok"] = v.get("status") == "ok"
        if not row["top_ok"]:
            row["held"] = held_by_ground_truth(t, res)
        return row
    if klass.special:
        return judge_special(klass, res, row)
    if klass.setting:
        return judge_setting(klass, res, row)
    judge_who(klass, res, row)
    split = "neighbor" in klass.candidates   # a contention class: the waits split by whose load they were
    every = gt_lib.everything(res["gt"])
    base_mean, mean = gt_lib.mean_latency_us(res["base"]), gt_lib.mean_latency_us(res["gt"])
    slowdown = mean / base_mean if mean and base_mean else None
    mech_all = gt_lib.mechanisms(every, split, slowdown)
    cands = {m: s for m, s in mech_all.items() if m in klass.candidates and s is not None}
    cause = max(cands, key=cands.get) if cands else None
    # Two mechanisms that each hold half of the victims' time or more are not
    # disjoint parts of it: one is inside the other (a commit's fsync chain
    # waiting on a device that serves a neighbor). Either one names the cause;
    # the draw is judged on the one the first finding names.
    named_mech = next((m for m, rules in MECHANISM_RULES.items()
                       if t and rule_key(t) in rules and m in cands and m != cause), None)
    if cause and named_mech and min(cands[cause], cands[named_mech]) >= MATERIAL_SHARE_PCT:
        row["nested_in"] = cause
        cause = named_mech
    row.update({"cause": cause, "cause_all": cands.get(cause), "slowdown": slowdown})
    row["scored"] = bool(cause) and cands[cause] >= MATERIAL_SHARE_PCT and \
        (slowdown is None or slowdown >= MATERIAL_SLOWDOWN)
    slow = basis_view(res, t)
    part = truth_part(cause, t, mech_all) if cause else None
    row["gt"] = gt_lib.mechanisms(slow, split or part.startswith("neighbor"), slowdown).get(part) if cause else None
    row["top_ok"] = bool(t) and v.get("status") in ("warning", "critical") and \
        rule_key(t) in MECHANISM_RULES.get(cause, set())
    if cause == "neighbor":
        row["named"] = names_the_neighbor(t, res, mech_all)
        row["top_ok"] = row["top_ok"] and row["named"]["ok"]
    row["share_ok"] = row["top_ok"] and row["share"] is not None and row["gt"] is not None and \
        abs(row["share"] - row["gt"]) <= SHARE_TOLERANCE
    return row


# A control's setting or neighbor is harmless, but the machine it runs on
# may not be: four readers and a loop worker on two CPUs wait for them. A
# finding on a control counts as held by the ground truth (reported apart,
# not as quiet) when the ground truth measures the mechanism it names at this
# share or more of the victims' time (the smallest part iodiag's rules call a
# material loss, docs/judgement.md) and within SHARE_TOLERANCE of its share.
CONTROL_HELD_MIN_PCT = 25.0


def held_by_ground_truth(finding, res):
    """{mechanism, gt, ok} for a control's first finding, or None when its rule
    names no mechanism the ground truth measures."""
    mech = next((m for m, rules in MECHANISM_RULES.items() if finding and rule_key(finding) in rules), None)
    if not mech or finding.get("share_pct") is None:
        return None
    slow = basis_view(res, finding)
    truth = gt_lib.mechanisms(slow).get(mech)
    ok = truth is not None and truth >= CONTROL_HELD_MIN_PCT and \
        abs(finding["share_pct"] - truth) <= SHARE_TOLERANCE
    return {"mechanism": mech, "gt": truth, "ok": ok}


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def print_row(row):
    ok = lambda b: "-" if b is None else ("yes" if b else "NO")
    if "error" in row:
        print(f"{row['class']:<21} {row['seed']:<7} ERROR {row['error']}")
        return
    params = ",".join(f"{k}={v}" for k, v in sorted(row["params"].items()))
    if row["control"]:
        h = row.get("held")
        held = "" if not h else \
            f" (ground truth {h['mechanism']} {fmt(h['gt'])} %: {'held' if h['ok'] else 'a false alarm'})"
        print(f"{row['class']:<21} {row['seed']:<7} {row['top1'][:48]:<48} {fmt(row['share']):>6} {'':>6} {'':>6}  "
              f"quiet {ok(row['top_ok']):<4} {row['status']:<8} {params}{held}")
        return
    scored = "" if row.get("scored") else " (weak: not scored)"
    named = f" (names {row['named']['who']}: {ok(row['named']['ok'])})" if row.get("named") else ""
    if row.get("nested_in"):
        named += f" (inside {row['nested_in']}, also >= {MATERIAL_SHARE_PCT} %)"
    print(f"{row['class']:<21} {row['seed']:<7} {row['top1'][:48]:<48} {fmt(row['share']):>6} {fmt(row['gt']):>6} "
          f"{fmt(row.get('slowdown'), 2):>6}  {ok(row['top_ok']):<4} {ok(row.get('share_ok')):<4} "
          f"{row['status']:<8} cause {row.get('cause')} {fmt(row.get('cause_all'))} %{scored}{named} {params}")
    who = who_line(row)
    if who:
        print(f"{'':<29} {who}")


def said(ok_value):
    return "not named" if ok_value is None else ("yes" if ok_value else "NO")


def proc_name(p):
    if not p.get("pid") and not p.get("cmdline") and not p.get("comm"):
        return "nobody"
    return f"{p.get('pid') or '?'} {p.get('cmdline') or p.get('comm') or '?'}"[:60]


def who_line(row):
    """The victim and culprit columns of a draw: the ground truth's and the verdict's."""
    if "victims" not in row:
        return ""
    if not row.get("who_scored"):
        return f"who: no victim ran {MATERIAL_SLOWDOWN}x slower (at most {fmt(row.get('victim_slowdown'), 2)}x): not scored"
    vs = row["victims"]
    truth = "; ".join(f"{proc_name(v)} {fmt(v['slowdown'], 1)}x {v['mechanism']} {fmt(v['mechanism_pct'], 0)} %"
                      for v in vs[:3]) + (f" (+{len(vs) - 3})" if len(vs) > 3 else "")
    line = f"victim {said(row['victim_ok'])}: named {proc_name(row['victim_named'])}; truth {truth}"
    if "culprit_ok" in row:
        c = row["culprit"]
        starter = " (which started it)" if row.get("culprit_by_starter") else ""
        line += (f" | culprit {said(row['culprit_ok'])}: named {proc_name(row['culprit_named'])}{starter}; "
                 f"truth {proc_name(c)} ({fmt(100 * c['part'], 0)} % of the others' load)")
    elif row.get("culprit") is None and "culprit_named" not in row and row.get("class") in CULPRIT_CLASSES:
        line += " | culprit: the ground truth found no other load"
    return line


def summarize(rows):
    print()
    print(f"{'class':<22} {'draws':>5} {'scored':>6} {'top-1':>6} {'share':>6} {'weak':>5} {'errors':>6}  "
          f"{'slowed':>6} {'victim':>6} {'culprit':>7}")
    for klass in draws.CLASSES:
        mine = [r for r in rows if r["class"] == klass.name]
        if not mine:
            continue
        errors = sum(1 for r in mine if "error" in r)
        good = [r for r in mine if "error" not in r]
        if klass.control:
            quiet = sum(1 for r in good if r["top_ok"])
            held = sum(1 for r in good if (r.get("held") or {}).get("ok"))
            print(f"{klass.name:<22} {len(mine):>5} {'':>6} {'':>6} {'':>6} {'':>5} {errors:>6}   quiet {quiet}/{len(good)}"
                  + (f", {held} held by the ground truth" if held else ""))
            continue
        scored = [r for r in good if r.get("scored")]
        slowed = [r for r in good if r.get("who_scored")]
        blamed = [r for r in slowed if r.get("culprit")]
        culprit = f"{sum(bool(r.get('culprit_ok')) for r in blamed)}/{len(blamed)}" if klass.culprit else "-"
        victim = f"{sum(bool(r.get('victim_ok')) for r in slowed)}/{len(slowed)}"
        print(f"{klass.name:<22} {len(mine):>5} {len(scored):>6} {sum(r['top_ok'] for r in scored):>6} "
              f"{sum(bool(r['share_ok']) for r in scored):>6} {len(good) - len(scored):>5} {errors:>6}  "
              f"{len(slowed):>6} {victim:>6} {culprit:>7}")
    faults = [r for r in rows if not r["control"]]
    scored = [r for r in faults if "error" not in r and r.get("scored")]
    controls = [r for r in rows if r["control"]]
    n = len(scored)
    top = sum(r["top_ok"] for r in scored)
    share = sum(bool(r["share_ok"]) for r in scored)
    quiet = sum(1 for r in controls if "error" not in r and r["top_ok"])
    held = sum(1 for r in controls if "error" not in r and (r.get("held") or {}).get("ok"))
    never_ok = [r for r in scored if r["status"] == "ok"]
    print()
    if n:
        print(f"scored fault draws: {n} of {len(faults)}; top-1 right at warning/critical {top}/{n} "
              f"({100.0 * top / n:.0f} %, goal >= 95 %); share within {SHARE_TOLERANCE:.0f} points {share}/{n} "
              f"({100.0 * share / n:.0f} %, goal >= 90 %); STATUS OK where the cause was material: {len(never_ok)}")
    if controls:
        print(f"control draws: {len(controls)}; quiet (nothing above info) {quiet}/{len(controls)}; "
              f"named with what the ground truth measured ({CONTROL_HELD_MIN_PCT:.0f} % or more, within "
              f"{SHARE_TOLERANCE:.0f} points) {held}; false alarms {len(controls) - quiet - held}")
    return summarize_who(faults) and (not n or (top >= 0.95 * n and share >= 0.9 * n)) and not never_ok \
        and quiet + held == len(controls)


def summarize_who(faults):
    """The victim and culprit lines; whether they meet the goal (95 % right,
    each culprit class's top-1 4 of 5, no material victim OK)."""
    good = [r for r in faults if "error" not in r]
    slowed = [r for r in good if r.get("who_scored")]
    # A culprit is scored where the ground truth found one (another process loaded the resource).
    blamed = [r for r in slowed if r["class"] in CULPRIT_CLASSES and r.get("culprit")]
    victim = sum(bool(r.get("victim_ok")) for r in slowed)
    culprit = sum(bool(r.get("culprit_ok")) for r in blamed)
    unnamed = sum(1 for r in slowed if r.get("victim_ok") is None)
    if slowed:
        print(f"draws with a victim {MATERIAL_SLOWDOWN}x slower: {len(slowed)}; victim named right {victim}/{len(slowed)} "
              f"({unnamed} not named)" + (f"; culprit named right {culprit}/{len(blamed)} "
                                          f"({sum(1 for r in blamed if r.get('culprit_ok') is None)} not named)"
                                          if blamed else ""))
    material = [r for r in good if r.get("material_victims")]
    ok_anyway = [f"{r['class']} {r['seed']}" for r in material if r["status"] == "ok"]
    print(f"STATUS OK where a victim ran {MATERIAL_SLOWDOWN}x slower with {MATERIAL_SHARE_PCT:.0f} % or more of its "
          f"time in one mechanism: {len(ok_anyway)} of {len(material)}" + (f" ({', '.join(ok_anyway)})" if ok_anyway else ""))
    per_class = True
    for name in CULPRIT_CLASSES:
        scored = [r for r in good if r["class"] == name and r.get("scored")]
        per_class = per_class and (not scored or sum(r["top_ok"] for r in scored) >= 0.8 * len(scored))
    return per_class and not ok_anyway and victim >= 0.95 * len(slowed) and culprit >= 0.95 * len(blamed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=4, help="draws per fault class (default 4)")
    ap.add_argument("--control-draws", type=int, default=4, help="draws per control class (default 4)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000,
                    help="base seed: draw i of a class uses seed*1000+i (default: from the clock, printed)")
    ap.add_argument("--only", default="", help="comma-separated class names (tests/lab/draws.py)")
    ap.add_argument("--secs", type=int, default=4, help="observation window per run (default 4)")
    ap.add_argument("--keep", default="", help="keep bundles and ground truth in this directory")
    ap.add_argument("--json", default="", help="also write the rows as JSON here")
    ap.add_argument("--iodiag", default=os.path.join(ROOT, "build", "iodiag"))
    ap.add_argument("--rejudge", default="",
                    help="record nothing: judge the bundles and ground truth kept in this directory (--keep) "
                         "again with the current build and rules (same --seed and --draws)")
    a = ap.parse_args()
    global REJUDGE_DIR
    REJUDGE_DIR = a.rejudge
    if os.geteuid() != 0 and not a.rejudge:
        print("accuracy_matrix: needs root (loop devices, cgroups, BPF)", file=sys.stderr)
        return 3
    for tool in ("fio", "bpftrace", "losetup"):
        if not shutil.which(tool) and not a.rejudge:
            print(f"accuracy_matrix: {tool} not found", file=sys.stderr)
            return 3
    if not os.access(a.iodiag, os.X_OK):
        print(f"accuracy_matrix: {a.iodiag} not built", file=sys.stderr)
        return 3
    only = {s for s in a.only.split(",") if s}
    unknown = only - set(draws.BY_NAME)
    if unknown:
        print(f"accuracy_matrix: unknown class(es) {', '.join(sorted(unknown))}", file=sys.stderr)
        return 3
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    # A snapshot of the binary with its rules and playbooks where an installed
    # binary finds them (BIN/../share/iodiag/): rebuilding or editing rules
    # during a matrix cannot mix versions.
    snap = tempfile.mkdtemp(prefix="iodiag-matrix-bin-")
    os.makedirs(os.path.join(snap, "bin"))
    shutil.copy2(a.iodiag, os.path.join(snap, "bin", "iodiag"))
    for d in ("rules", "playbooks"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(snap, "share", "iodiag", d))
    a.iodiag = os.path.join(snap, "bin", "iodiag")
    try:
        return 0 if run_matrix(a, only) else 1
    finally:
        shutil.rmtree(snap, ignore_errors=True)


def run_matrix(a, only):
    print(f"seed {a.seed}: reproduce with --seed {a.seed} (a class: --only CLASS)")
    print(f"{'class':<21} {'seed':<7} {'iodiag top-1 (rule@instance)':<48} {'share':>6} {'truth':>6} {'slow x':>6}  "
          f"top  share status   cause")
    rows = []
    start = time.time()
    for klass in draws.CLASSES:
        if only and klass.name not in only:
            continue
        n = a.control_draws if klass.control else a.draws
        for i in range(n):
            seed = a.seed * 1000 + i
            res = run_draw(a, klass, seed)
            if res is None:   # --rejudge: this draw was not kept
                continue
            if "skipped" in res:
                print(f"{klass.name:<21} {seed:<7} {res['skipped']}")
                continue
            if "error" in res:
                row = {"class": klass.name, "seed": seed, "params": res["params"], "error": res["error"],
                       "control": klass.control, "top_ok": False}
            else:
                row = judge(klass, res, seed)
            print_row(row)
            rows.append(row)
            sys.stdout.flush()
    ok = summarize(rows)
    print(f"elapsed {time.time() - start:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return ok


if __name__ == "__main__":
    sys.exit(main())
