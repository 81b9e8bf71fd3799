#!/usr/bin/python3
"""A latency-sensitive SQLite reader for the lab: point lookups by primary key
in a database much larger than what a short run reads, so most lookups read
a leaf page from storage (a cold cache: the lab mounts the filesystem just
before the run). Its process name is python3.

    sqlite_lookup.py build DB MB      make DB: about MB megabytes of 1 KiB rows
    sqlite_lookup.py read DB THREADS  look rows up at random, THREADS threads, until killed
"""
import os
import random
import sqlite3
import sys
import threading

ROW_BYTES = 1000


def build(path, mb):
    # One transaction, no journal, no syncs: a fixture, not the workload.
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    rows = mb * 1024 * 1024 // (ROW_BYTES + 24)
    db.execute("BEGIN")
    blob = os.urandom(ROW_BYTES)
    db.executemany("INSERT INTO t VALUES (?, ?)", ((k, blob) for k in range(rows)))
    db.execute("COMMIT")
    db.close()


def reader(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    # A small page cache of SQLite's own: lookups read through the OS, as
    # an application whose data is far larger than its cache does.
    db.execute("PRAGMA cache_size=-1024")
    rows = db.execute("SELECT max(k) FROM t").fetchone()[0] + 1
    while True:
        db.execute("SELECT v FROM t WHERE k = ?", (random.randrange(rows),)).fetchone()


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("build", "read"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "build":
        build(sys.argv[2], int(sys.argv[3]))
        return
    ts = [threading.Thread(target=reader, args=(sys.argv[2],), daemon=True) for _ in range(int(sys.argv[3]))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main()
