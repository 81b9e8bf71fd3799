#!/usr/bin/python3
"""A spool writer for the lab: creates new files, as a mail queue, a message
spool or an upload directory does (its process name is python3).

    spool.py DIR BS_KB MODE RATE

Creates files of BS_KB KiB, each under a new name (DIR/NNN/NNNNNN, 1000 to a
directory), at RATE files per second at most (a producer's pace: unpaced, a
filesystem with the defaults would fill with millions of them). MODE: plain
(create, write, close), or fsync (an fsync of each file before it is closed,
as a mail server does before it acknowledges a message); these never rename
or unlink: what they wait for is their creates and, with fsync, commits.
rotate: fsync as well, and the file written KEEP (100) files before is
removed, as a queue whose consumer deletes what it delivered: each commit
frees blocks.
"""
import os
import sys
import time


def main():
    a = sys.argv[1:]
    if len(a) != 4 or a[2] not in ("plain", "fsync", "rotate"):
        raise SystemExit(__doc__)
    top, bs, fsync, rate = a[0], int(a[1]) * 1024, a[2] != "plain", float(a[3])
    keep = 100 if a[2] == "rotate" else 0
    data = os.urandom(bs) if bs else b""
    period = 1.0 / rate
    n, due = 0, time.monotonic()
    while True:
        sub = os.path.join(top, "%03d" % (n // 1000))
        if n % 1000 == 0:
            os.makedirs(sub, exist_ok=True)
        fd = os.open(os.path.join(sub, "%06d" % n), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        if data:
            os.write(fd, data)
        if fsync:
            os.fsync(fd)
        os.close(fd)
        if keep and n >= keep:
            old = n - keep
            os.unlink(os.path.join(top, "%03d" % (old // 1000), "%06d" % old))
        n += 1
        due += period
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            due = time.monotonic()   # behind: no burst to catch up


if __name__ == "__main__":
    main()
