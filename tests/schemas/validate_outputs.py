#!/usr/bin/env python3
"""Validates every JSON document iodiag writes against the shipped JSON Schemas.

Documents: the recorded bundles in tests/fixtures/bundles, the verdict of a
replay of each of them (--format json), `iodiag diff` of pairs of them,
`iodiag check --format json` of short live windows (with a state directory
and a site configuration) and the bundles it keeps, and a bundle written by
`iodiag record`.

The published schemas let consumers ignore fields added later; here every
object is validated strictly (no property the schema does not declare), so a
field added to the output without its schema fails this test.

Exit 0: all valid; 1: a document does not validate; 77: python3-jsonschema is
missing (ctest shows the test as skipped).

    tests/schemas/validate_outputs.py --iodiag build/iodiag [--source .]
"""
import argparse
import contextlib
import copy
import fcntl
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (apt-get install python3-jsonschema)")
    sys.exit(77)

@contextlib.contextmanager
def machine_lock():
    """The live tests' machine lock (tests/live/live_support.cpp) for the live
    windows below: BPF loaded beside a live test would upset what it counts
    (programs left attached, CPU cost), and the test command runs this test
    beside them."""
    if os.environ.get("IODIAG_LIVE_LOCK_HELD") == "1":
        yield
        return
    try:
        f = open("/run/lock/iodiag-live.lock", "a")
    except OSError:
        f = open("/tmp/iodiag-live.lock", "a")
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


SCHEMAS = {
    "bundle": "engine/evidence/iodiag-bundle.schema.json",
    "verdict": "engine/render/iodiag-verdict.schema.json",
    "diff": "engine/render/iodiag-diff.schema.json",
}


def strict(schema):
    """Every object schema that lists properties gets additionalProperties: false."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


class Checker:
    def __init__(self, source):
        self.validators = {}
        for kind, path in SCHEMAS.items():
            with open(os.path.join(source, path)) as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            self.validators[kind] = jsonschema.Draft202012Validator(strict(schema))
        self.failures = 0
        self.checked = 0

    def errors(self, kind, doc):
        return sorted(self.validators[kind].iter_errors(doc), key=lambda e: list(e.absolute_path))

    def check(self, kind, doc, what):
        self.checked += 1
        errs = self.errors(kind, doc)
        for e in errs[:5]:
            print(f"INVALID {kind}: {what}: at /{'/'.join(map(str, e.absolute_path))}: {e.message}")
        if errs:
            self.failures += 1
        else:
            print(f"valid {kind}: {what}")


def run(cmd, ok_codes=(0,)):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout


def self_test(c, verdict):
    """The validator must reject what is wrong, or this test could not fail."""
    broken = copy.deepcopy(verdict)
    del broken["fingerprint"]
    extra = copy.deepcopy(verdict)
    extra["undocumented"] = 1
    wrong = copy.deepcopy(verdict)
    wrong["status"] = "fine"
    for doc, why in ((broken, "missing fingerprint"), (extra, "undocumented field"), (wrong, "bad status")):
        if not c.errors("verdict", doc):
            print(f"SELF-TEST FAILED: a verdict with a {why} validates")
            c.failures += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iodiag", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = ap.parse_args()
    c = Checker(args.source)
    bundles = sorted(b for b in glob.glob(os.path.join(args.source, "tests/fixtures/bundles/*.json"))
                     if not b.endswith("expected.json"))
    first_verdict = None
    for b in bundles:
        name = os.path.basename(b)
        with open(b) as f:
            c.check("bundle", json.load(f), name)
        verdict = json.loads(run([args.iodiag, "replay", b, "--format", "json"]))
        c.check("verdict", verdict, "replay " + name)
        first_verdict = first_verdict or verdict
    for i in range(len(bundles) - 1):   # diff exits 1 when AFTER is worse: both are answers
        before, after = bundles[i], bundles[i + 1]
        doc = json.loads(run([args.iodiag, "diff", before, after, "--format", "json"], ok_codes=(0, 1)))
        c.check("diff", doc, f"diff {os.path.basename(before)} {os.path.basename(after)}")
    if first_verdict:
        self_test(c, first_verdict)

    with tempfile.TemporaryDirectory(prefix="iodiag-schemas-") as tmp, machine_lock():
        # A live window: as root with every collector, otherwise with what an
        # unprivileged user can read (still a verdict, still a bundle). Twice
        # over a state directory that also holds a corrupt bundle, with a site
        # configuration: the check object with its history and config parts.
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        with open(os.path.join(state, "iodiag-check-20000101T000000Z.json"), "w") as f:
            f.write("{ not json")
        config = os.path.join(tmp, "iodiag.yaml")
        with open(config, "w") as f:
            f.write("rules:\n  history.layer_share_shift: {severity: warning}\n")
        for run_no in (1, 2):
            doc = json.loads(run([args.iodiag, "check", "--duration", "1", "--format", "json", "--state-dir", state,
                                  "--config", config], ok_codes=(0, 1, 2, 3)))
            c.check("verdict", doc, f"check --format json (run {run_no})")
            for part in ("history", "site_config"):
                if part not in doc.get("check", {}):
                    print(f"INVALID verdict: check --format json has no check.{part}")
                    c.failures += 1
        for b in sorted(glob.glob(os.path.join(state, "iodiag-check-*.json"))):
            if b.endswith("20000101T000000Z.json"):
                continue
            with open(b) as f:
                c.check("bundle", json.load(f), "check's state directory: " + os.path.basename(b))
        rec = os.path.join(tmp, "recorded.json")
        run([args.iodiag, "record", "--duration", "1", "-o", rec, "--format", "json"])
        with open(rec) as f:
            c.check("bundle", json.load(f), "record -o")

    print(f"{c.checked} documents checked, {c.failures} invalid")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
