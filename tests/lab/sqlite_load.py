#!/usr/bin/python3
"""A small SQLite application for the lab: THREADS writers, each committing
small transactions to a database of its own under DIR, until killed. Every
commit is durable (synchronous=FULL: an fsync of the journal or WAL per
commit), as an application that cannot lose an acknowledged write does.

    sqlite_load.py DIR [THREADS] [ROWS_PER_COMMIT] [JOURNAL_MODE]

JOURNAL_MODE: wal (default) or delete (the rollback journal: two fsyncs per
commit). Python's sqlite3 module links Debian's libsqlite3; its process name
is python3.
"""
import os
import random
import sqlite3
import sys
import threading


def writer(path, rows, mode):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA journal_mode={mode}")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB)")
    while True:
        db.execute("BEGIN")
        for _ in range(rows):
            db.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (random.randrange(1 << 20), os.urandom(200)))
        db.execute("COMMIT")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    where = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    mode = sys.argv[4] if len(sys.argv) > 4 else "wal"
    if mode not in ("wal", "delete"):
        raise SystemExit(f"journal mode {mode}: wal or delete")
    ts = [threading.Thread(target=writer, args=(os.path.join(where, f"db{i}.sqlite"), rows, mode), daemon=True)
          for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main()
