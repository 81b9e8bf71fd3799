#!/usr/bin/env python3
"""iodiag --journal speaks journald's native protocol.

In a private mount namespace (nothing outside it changes) an empty tmpfs
covers /run, and this test binds /run/systemd/journal/socket itself, as
journald does. `iodiag replay BUNDLE --journal` must send one entry whose
MESSAGE is the verdict as one JSON line (equal to --format json), with
MESSAGE_ID, PRIORITY, SYSLOG_IDENTIFIER and the IODIAG_* fields. Without the
socket it must warn with the reason and still print the verdict and exit 0.

  tests/live/journal_output_test.py --iodiag build/iodiag --bundle tests/fixtures/bundles/dirty_throttle.json
Exit 77 (ctest: skipped) without root or unshare.
"""
import argparse
import array
import json
import os
import shutil
import socket
import struct
import subprocess
import sys

SKIP = 77
MESSAGE_ID = "14b1698f2b8b483a9ac6fdefbac99274"   # app/journal_output.hpp


def parse_native(data):
    """journald's native protocol: KEY=value lines, or KEY\\n<le64 size><bytes>\\n."""
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            fields[k.decode()] = v.decode()
            i = nl + 1
        else:
            size = struct.unpack("<Q", data[nl + 1:nl + 9])[0]
            fields[line.decode()] = data[nl + 9:nl + 9 + size].decode()
            i = nl + 9 + size + 1
    return fields


def receive(sock):
    """One entry: the datagram itself, or (too big for one) a memfd passed with it."""
    fds = array.array("i")
    msg, anc, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    if fds:
        with os.fdopen(fds[0], "rb") as f:
            return f.read()
    return msg


def inner(args):
    subprocess.run(["mount", "-t", "tmpfs", "iodiag-journal-test", "/run"], check=True)
    want = json.loads(subprocess.run([args.iodiag, "replay", args.bundle, "--format", "json"],
                                     capture_output=True, text=True, check=True).stdout)

    # 1. journald absent: a warning with the reason, the verdict still printed, exit 0.
    r = subprocess.run([args.iodiag, "replay", args.bundle, "--journal", "--format", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    assert json.loads(r.stdout) == want
    assert "journald is not running (/run/systemd/journal/socket: No such file or directory)" in r.stderr, r.stderr
    print(f"no journald: {r.stderr.strip()}")

    # 2. journald's socket present: one entry with the verdict.
    os.makedirs("/run/systemd/journal")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("/run/systemd/journal/socket")
    sock.settimeout(10)
    r = subprocess.run([args.iodiag, "replay", args.bundle, "--journal"], capture_output=True, text=True)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    assert "journal" not in r.stderr, r.stderr
    entry = parse_native(receive(sock))
    got = json.loads(entry["MESSAGE"])
    assert got == want, "MESSAGE is not the --format json verdict"
    assert "\n" not in entry["MESSAGE"], "MESSAGE is not one line"
    assert entry["MESSAGE_ID"] == MESSAGE_ID
    assert entry["SYSLOG_IDENTIFIER"] == "iodiag"
    assert entry["IODIAG_MODE"] == "replay"
    assert entry["IODIAG_FINGERPRINT"] == want["fingerprint"]
    assert entry["IODIAG_STATUS"] == want["status"]
    assert entry["PRIORITY"] == {"critical": "2", "warning": "4"}.get(want["status"], "6")
    if want["findings"]:
        assert entry["IODIAG_TOP_RULE"] == want["findings"][0]["rule_id"]
    print(f"journal entry: {len(entry['MESSAGE'])} bytes of verdict, status {entry['IODIAG_STATUS']}, "
          f"fingerprint {entry['IODIAG_FINGERPRINT']}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iodiag", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.iodiag, args.bundle = os.path.abspath(args.iodiag), os.path.abspath(args.bundle)
    if args.inner:
        return inner(args)
    if os.geteuid() != 0:
        print("SKIP: needs root (a private mount namespace over /run)")
        return SKIP
    if not shutil.which("unshare"):
        print("SKIP: needs unshare (util-linux)")
        return SKIP
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                        "--inner", "--iodiag", args.iodiag, "--bundle", args.bundle])
    return r.returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
