#!/usr/bin/env python3
"""iodiag watch captures a fault that starts after it was started.

Holds the machine lock, measures the background I/O pressure for a few
seconds, starts `iodiag watch` (I/O pressure trigger set above the background,
no rate limit, short captures), then starts a real fault: the lab's
dirty_throttle (a buffered writer under a tiny vm.dirty_bytes on a loop
device, every change undone by the lab script). Passes when a capture
appears whose trigger fired after the fault began, whose bundle's window lies
inside the fault, whose verdict names the dirty-throttling layer, and whose
bundle replays to the verdict kept with it. Watch is stopped by its PID
(SIGTERM) on every exit path and must exit 0.

  tests/live/watch_capture_test.py --iodiag build/iodiag [--source .]
Exit 77 (ctest: skipped) with the reason without root or the lab's tools.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_support import hold_machine_lock, stop_process  # noqa: E402

SKIP = 77


def schema_validators(source):
    """A strict validator (every declared object closed, as tests/schemas does)
    of the capture record; None without python3-jsonschema. The verdict
    inside is the replay's (checked equal below), which tests/schemas
    validates against its own schema."""
    try:
        import jsonschema
    except ImportError:
        return None
    sys.path.insert(0, os.path.join(source, "tests", "schemas"))
    from validate_outputs import strict  # noqa: E402
    out = {}
    for kind, path in [("capture", "app/iodiag-watch-capture.schema.json")]:
        with open(os.path.join(source, path)) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        out[kind] = jsonschema.Draft202012Validator(strict(schema))
    return out


def validate(validators, kind, doc, what):
    if validators is None:
        return
    errors = list(validators[kind].iter_errors(doc))
    assert not errors, f"{what} does not validate against its schema: " + "; ".join(
        f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])


def log(msg):
    print(f"[watch] {msg}", flush=True)


def io_some_total_us():
    with open("/proc/pressure/io") as f:
        for line in f:
            if line.startswith("some "):
                return int(line.split("total=")[1])
    raise RuntimeError("/proc/pressure/io has no 'some' line")


def background_io_pressure(seconds):
    a, t = io_some_total_us(), time.monotonic()
    time.sleep(seconds)
    return (io_some_total_us() - a) / ((time.monotonic() - t) * 1e6) * 100


def captures(d):
    out = []
    for path in sorted(glob.glob(os.path.join(d, "watch-*Z.json")) + glob.glob(os.path.join(d, "watch-*Z-*.json"))):
        if path.endswith(".bundle.json"):
            continue
        try:
            with open(path) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            pass   # written atomically, but listed between two captures: next poll
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iodiag", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    source, iodiag = os.path.abspath(args.source), os.path.abspath(args.iodiag)
    if os.geteuid() != 0:
        print("SKIP: needs root (BPF collectors for the capture, loop devices, vm.dirty_bytes)")
        return SKIP
    if not os.path.exists("/proc/pressure/io"):
        print("SKIP: needs PSI (/proc/pressure/io; kernel booted with psi=0?)")
        return SKIP
    for tool in ["fio", "losetup", "mkfs.ext4"]:
        if not shutil.which(tool):
            print(f"SKIP: needs {tool}")
            return SKIP

    lock = hold_machine_lock()
    work = tempfile.mkdtemp(prefix="iodiag-watch-")
    flag = os.path.join(work, "captured")
    watch = lab = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    t0 = time.monotonic()
    try:
        background = background_io_pressure(3)
        threshold = max(20.0, min(background + 20.0, 90.0))
        log(f"background I/O pressure {background:.1f} %; trigger at {threshold:.0f} % for 2 s")
        if background > 60:
            print(f"SKIP: background I/O pressure {background:.0f} % leaves no room to see a fault's")
            return SKIP
        watch_log = open(os.path.join(work, "watch.log"), "w")
        watch_out = open(os.path.join(work, "watch.out"), "w")   # a file: a pipe nobody reads fills up
        watch = subprocess.Popen(
            [iodiag, "watch", "--dir", os.path.join(work, "captures"), "--psi-some", f"{threshold:.0f}",
             "--psi-for", "2", "--min-gap", "0", "--capture-duration", "3", "--format", "jsonl"],
            stdout=watch_out, stderr=watch_log, text=True)
        log(f"started iodiag watch (pid {watch.pid})")
        time.sleep(3)
        assert watch.poll() is None, f"watch exited {watch.returncode}: {open(watch_log.name).read()}"

        fault_start = time.time()
        env = dict(os.environ, IODIAG=iodiag,
                   IODIAG_LAB_RUN=f"for i in $(seq 120); do [ -e {flag} ] && exit 0; sleep 0.5; done")
        lab = subprocess.Popen([os.path.join(source, "tests/lab/scenario.sh"), "dirty_throttle", "-"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log("fault started (lab dirty_throttle)")
        capture = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and capture is None:
            assert watch.poll() is None, f"watch exited {watch.returncode}: {open(watch_log.name).read()}"
            for c in captures(os.path.join(work, "captures")):
                if c["trigger"]["t_unix"] >= fault_start:
                    capture = c
            time.sleep(0.5)
        open(flag, "w").close()   # the lab undoes the fault now
        lab_out, _ = lab.communicate(timeout=120)
        assert lab.returncode == 0, f"lab scenario failed:\n{lab_out}"
        assert capture, f"no capture within 60 s of the fault; watch said:\n{open(watch_log.name).read()}"
        trig = capture["trigger"]
        log(f"captured {capture['bundle']} {trig['t_unix'] - fault_start:.1f} s into the fault: {trig['reason']}")
        assert trig["kind"] == "psi_io", trig
        assert capture["before"], "no samples from before the trigger"

        bundle = os.path.join(work, "captures", capture["bundle"])
        with open(bundle) as f:
            window = json.load(f)["window"]
        assert window["start_unix"] >= fault_start, (window, fault_start)
        verdict = capture["verdict"]
        layers = [f["layer"] for f in verdict["findings"]]
        log(f"verdict {verdict['status']}, findings on {layers}")
        assert "dirty" in layers, f"the capture's verdict does not name dirty throttling: {layers}"
        replay = subprocess.run([iodiag, "replay", bundle, "--format", "json"], capture_output=True, text=True)
        assert replay.returncode == 0, replay.stderr
        assert json.loads(replay.stdout) == verdict, "the kept bundle does not replay to the kept verdict"
        validators = schema_validators(source)
        validate(validators, "capture", capture, "the capture record")
        log("capture record valid against its schema" if validators else
            "python3-jsonschema missing: schemas not checked")

        watch.send_signal(signal.SIGTERM)
        watch.wait(timeout=30)
        assert watch.returncode == 0, f"watch exited {watch.returncode} on SIGTERM"
        watch_out.close()
        lines = [json.loads(x) for x in open(watch_out.name) if x.strip()]
        assert any(v["fingerprint"] == verdict["fingerprint"] for v in lines), "the capture's verdict was not printed"
        assert all(v["schema"] == "iodiag-verdict" for v in lines), "a --format jsonl line is not a verdict"
        log(f"passed in {time.monotonic() - t0:.1f} s")
        return 0
    finally:
        if lab and lab.poll() is None:
            open(flag, "w").close()
            try:
                lab.wait(timeout=120)   # the flag ends its command; its EXIT trap undoes the fault
            except subprocess.TimeoutExpired:
                stop_process(lab)
        if watch:
            stop_process(watch)
        shutil.rmtree(work, ignore_errors=True)
        if lock:
            lock.close()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
