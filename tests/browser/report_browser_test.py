#!/usr/bin/env python3
"""The HTML report in a real browser (Debian's chromium, headless, offline).

For each case, `iodiag report` writes the page; chromium loads it from the
file (fresh profile, no network: every host name resolves to nothing) and
gives back the DOM after load, a screenshot and every console message. Checks:

- no console message at all (the page has no script: any message is an error,
  a blocked load or a CSP violation). That the check can fail is proven first
  on a page with a deliberate console.error and an uncaught exception;
- every heatmap has intervals x buckets cells, the numbers computed here from
  the bundle itself (rows from the lowest to the highest bucket used, over
  both bundles of a before/after pair), and counts the bundle's operations;
- the heatmaps the series call for are all there (per series name, the busiest
  series of the fewest label keys, up to 6);
- the title of the verdict's top finding (from `iodiag replay --format json`)
  is in the page's text;
- the screenshot is not blank (PNG decoded here with zlib);
- every SVG of the page, and a standalone `iodiag heatmap -o` SVG, parses
  with an XML parser;
- a version-1 bundle gives a report that says which pictures need a newer
  recording.

Cases: a version-2 bundle built from a recorded version-1 fixture with a
series added here, that fixture itself, the two as before/after, every
recorded bundle in tests/fixtures/series/, and the made one before a recorded
one (both sides with heatmaps: each side's cells from its own intervals, the
rows of a pair shared, every series both kept drawn on both sides). With --bundle [--after], only that
case (the live test uses it on a fresh recording).

Exit 0 passed, 1 failed, 77 skipped (no chromium), printed with the reason.
"""
import argparse
import html.parser
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

SKIP = 77
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
    # No network: every name resolves to nothing (the page must not need any).
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr", "--v=0",
]
PER_NAME = 6   # heatmaps per series name in a report (iodiag report --heatmaps default)
MAX_COLUMNS = 600   # longer recordings are drawn with intervals merged per column


class Failure(Exception):
    pass


def find_chromium():
    for name in ("chromium", "chromium-headless-shell", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(chromium, page, workdir, width=1280, height=2400):
    """Loads `page` (a file); returns (dom, console lines, png bytes)."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=workdir)
    shot = os.path.join(workdir, os.path.basename(page) + ".png")
    cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
           f"--screenshot={shot}", "--dump-dom", "file://" + os.path.abspath(page)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Failure(f"chromium exited {p.returncode} on {page}: {p.stderr[-2000:]}")
    # Console messages are logged as "...:CONSOLE:<line>] "text", source: URL (line)".
    console = [l for l in p.stderr.splitlines() if re.search(r":CONSOLE(\(\d+\)|:\d+)\]", l)]
    with open(shot, "rb") as f:
        png = f.read()
    shutil.rmtree(profile, ignore_errors=True)
    return p.stdout, console, png


# ---- PNG ------------------------------------------------------------------

def _swar_add(a, b, mask_lo, mask_hi):
    """Byte-wise a + b mod 256 of two big integers (no carry between bytes)."""
    return ((a & mask_lo) + (b & mask_lo)) ^ ((a ^ b) & mask_hi)


def decode_png(data):
    """(width, height, channels, pixel rows as bytes) of an 8-bit RGB/RGBA/grey PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Failure("screenshot is not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, colour, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise Failure(f"unexpected PNG format: depth {depth}, colour type {colour}, interlace {interlace}")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise Failure("PNG data has the wrong length")
    mask_lo = int.from_bytes(b"\x7f" * stride, "big")
    mask_hi = int.from_bytes(b"\x80" * stride, "big")
    rows, prev = [], bytes(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 0:
            cur = line
        elif f == 2:   # Up
            cur = _swar_add(int.from_bytes(line, "big"), int.from_bytes(prev, "big"), mask_lo, mask_hi).to_bytes(stride, "big")
        elif f == 1:   # Sub: a prefix sum per channel, in log2(width) shifted additions
            x, shift = int.from_bytes(line, "big"), channels * 8
            full = (1 << (stride * 8)) - 1
            while shift < stride * 8:
                x = _swar_add(x, (x >> shift) & full, mask_lo, mask_hi)
                shift *= 2
            cur = x.to_bytes(stride, "big")
        else:          # Average, Paeth: byte by byte
            out = bytearray(line)
            for i in range(stride):
                a = out[i - channels] if i >= channels else 0
                b = prev[i]
                if f == 3:
                    out[i] = (out[i] + ((a + b) >> 1)) & 0xFF
                else:
                    c = prev[i - channels] if i >= channels else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    out[i] = (out[i] + pred) & 0xFF
            cur = bytes(out)
        rows.append(cur)
        prev = cur
    return width, height, channels, rows


def check_not_blank(png, what):
    width, height, channels, rows = decode_png(png)
    colours, ink = set(), 0
    for row in rows[::4]:
        for x in range(0, width * channels, channels * 4):
            px = row[x:x + 3] if channels >= 3 else row[x:x + 1] * 3
            colours.add(px)
            if min(px) < 235:
                ink += 1
    sampled = len(rows[::4]) * len(range(0, width * channels, channels * 4))
    if len(colours) < 8 or ink < sampled * 0.01:
        raise Failure(f"{what}: the screenshot looks blank ({len(colours)} colours, {ink} of {sampled} "
                      "sampled pixels not near white)")
    return len(colours), ink / sampled


# ---- the page ---------------------------------------------------------------

class DomReader(html.parser.HTMLParser):
    """Text of the page, heatmaps (their data-* and cell counts), scripts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.heatmaps, self.scripts = [], [], 0
        self._in_heatmap = None
        self._skip = 0
        # A before/after page heads each side of a pair with <h4>before</h4> or
        # <h4>after</h4>: the side a heatmap is drawn for.
        self._side, self._in_h4 = None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "script":
            self.scripts += 1
        if tag in ("style", "title", "script"):
            self._skip += 1
        if tag == "h4":
            self._in_h4 = True
        if tag == "svg" and "heatmap" in classes:
            self._in_heatmap = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
            self._in_heatmap["cells"] = 0
            self._in_heatmap["side"] = self._side
            self.heatmaps.append(self._in_heatmap)
        if tag == "rect" and "cell" in classes and self._in_heatmap is not None:
            self._in_heatmap["cells"] += 1

    def handle_endtag(self, tag):
        if tag == "h4":
            self._in_h4 = False
        if tag in ("style", "title", "script") and self._skip:
            self._skip -= 1
        if tag == "svg":
            self._in_heatmap = None

    def handle_data(self, data):
        if self._in_h4 and data.strip() in ("before", "after"):
            self._side = data.strip()
        if not self._skip:
            self.text.append(data)

    def page_text(self):
        return re.sub(r"\s+", " ", " ".join(self.text))


def labels_suffix(labels):
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}" if labels else ""


def series_rows(bundles, name, labels, own):
    """(intervals, rows, total) a heatmap of that series drawn for bundle `own`
    must have: its intervals and operations from `own`, rows from the lowest to
    the highest bucket any interval of any of `bundles` uses (a before/after
    pair is drawn on one scale)."""
    lo, hi, total, intervals = None, None, 0, 0
    for b in bundles:
        for h in b.get("series", {}).get("histograms", []):
            if h["name"] != name or labels_suffix(h.get("labels", {})) != labels:
                continue
            if b is own:
                intervals = b["series"]["count"]
                total = sum(sum(row) for row in h["log2_buckets"])
            for buckets in h["log2_buckets"]:
                for i, c in enumerate(buckets):
                    if c:
                        lo = i if lo is None else min(lo, i)
                        hi = i if hi is None else max(hi, i)
    return intervals, (0 if lo is None else hi - lo + 1), total


def expected_heatmaps(bundle):
    """Per series name: the non-empty series with the fewest label keys, up to PER_NAME."""
    by_name = {}
    for h in bundle.get("series", {}).get("histograms", []):
        by_name.setdefault(h["name"], []).append(h)
    out = set()
    for name, hs in by_name.items():
        fewest = min(len(h.get("labels", {})) for h in hs)
        keep = [h for h in hs if len(h.get("labels", {})) == fewest]
        keep.sort(key=lambda h: -sum(sum(b) for b in h["log2_buckets"]))
        for h in keep[:PER_NAME]:
            if sum(sum(b) for b in h["log2_buckets"]):
                out.add((name, labels_suffix(h.get("labels", {}))))
    return out


def parse_svgs(source, what):
    svgs = re.findall(r"<svg\b.*?</svg>", source, flags=re.S)
    for i, svg in enumerate(svgs):
        try:
            ET.fromstring(svg)
        except ET.ParseError as e:
            raise Failure(f"{what}: SVG #{i + 1} is not well-formed XML: {e}")
    return len(svgs)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout


def check_report(iodiag, chromium, workdir, name, bundle_paths):
    """One report (one bundle, or BEFORE AFTER) through the browser."""
    t0 = time.monotonic()
    page = os.path.join(workdir, name + ".html")
    run([iodiag, "report", *bundle_paths, "-o", page])
    with open(page, encoding="utf-8") as f:
        source = f.read()
    bundles = []
    for p in bundle_paths:
        with open(p, encoding="utf-8") as f:
            bundles.append(json.load(f))
    svg_count = parse_svgs(source, name)

    dom, console, png = browse(chromium, page, workdir)
    if console:
        raise Failure(f"{name}: console messages:\n  " + "\n  ".join(console))
    reader = DomReader()
    reader.feed(dom)
    if reader.scripts:
        raise Failure(f"{name}: the page has {reader.scripts} script element(s)")
    text = reader.page_text()

    # Every heatmap: intervals x buckets cells, as the bundle(s) say.
    for hm in reader.heatmaps:
        if len(bundles) == 2 and hm["side"] not in ("before", "after"):
            raise Failure(f"{name}: heatmap {hm['metric']}{hm['labels']} is under neither 'before' nor 'after'")
        own = bundles[1] if len(bundles) == 2 and hm["side"] == "after" else bundles[0]
        intervals, rows, total = series_rows(bundles, hm["metric"], hm["labels"], own)
        # Beyond MAX_COLUMNS intervals, neighbouring ones share a column.
        per = -(-intervals // MAX_COLUMNS) if intervals > MAX_COLUMNS else 1
        columns = -(-intervals // per)
        if (hm["cells"] != columns * rows or int(hm["intervals"]) != intervals or int(hm["columns"]) != columns
                or int(hm["rows"]) != rows):
            raise Failure(f"{name}: heatmap {hm['metric']}{hm['labels']} has {hm['cells']} cells "
                          f"({hm['columns']} columns of {hm['intervals']} intervals x {hm['rows']} rows); the "
                          f"bundle says {intervals} intervals ({columns} columns) x {rows} buckets")
        if int(hm["total"]) != total:
            raise Failure(f"{name}: heatmap {hm['metric']}{hm['labels']} counts {hm['total']} operations, "
                          f"the bundle {total}")
    drawn = {(hm["metric"], hm["labels"]) for hm in reader.heatmaps}
    want = set().union(*(expected_heatmaps(b) for b in bundles))
    if drawn != want:
        raise Failure(f"{name}: heatmaps drawn {sorted(drawn)}, the series call for {sorted(want)}")
    # Before/after: a series both recordings kept is drawn on both sides.
    if len(bundles) == 2:
        sides = {(hm["side"], hm["metric"], hm["labels"]) for hm in reader.heatmaps}
        for metric, labels in sorted(want):
            for side, b in (("before", bundles[0]), ("after", bundles[1])):
                if series_rows([b], metric, labels, b)[2] and (side, metric, labels) not in sides:
                    raise Failure(f"{name}: {metric}{labels} has operations in the {side} bundle but no "
                                  f"heatmap on the {side} side")

    # The top finding of each verdict is on the page.
    for p in bundle_paths:
        verdict = json.loads(run([iodiag, "replay", p, "--format", "json"]))
        if verdict["findings"]:
            title = re.sub(r"\s+", " ", verdict["findings"][0]["title"])
            if title not in text:
                raise Failure(f"{name}: the top finding '{title}' is not in the page's text")
    # A bundle without series says which pictures need a newer recording.
    for b in bundles:
        if not b.get("series") and "need a newer recording" not in text:
            raise Failure(f"{name}: a version-{b.get('schema_version')} bundle's report does not say which "
                          "pictures need a newer recording")
    colours, ink = check_not_blank(png, name)
    cells = sum(h["cells"] for h in reader.heatmaps)
    print(f"ok {name}: {len(reader.heatmaps)} heatmaps ({cells} cells), {svg_count} SVGs well-formed, "
          f"no console message, screenshot {colours} colours / {ink:.0%} ink, {time.monotonic() - t0:.1f} s")


def check_standalone_heatmap(iodiag, workdir, bundle_path):
    with open(bundle_path) as f:
        if not json.load(f).get("series", {}).get("histograms"):
            print(f"skipped the standalone heatmap: {bundle_path} has no histogram series")
            return
    out = os.path.join(workdir, "heat.svg")
    run([iodiag, "heatmap", bundle_path, "-o", out])
    tree = ET.parse(out)
    root = tree.getroot()
    cells = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if "cell" in (r.get("class") or "").split()]
    if len(cells) != int(root.get("data-columns")) * int(root.get("data-rows")) or not cells:
        raise Failure(f"standalone heatmap: {len(cells)} cells for {root.get('data-columns')} x {root.get('data-rows')}")
    print(f"ok standalone heatmap SVG parses ({len(cells)} cells)")


def check_console_detection(chromium, workdir):
    """The console check must be able to fail: a page with a deliberate error."""
    page = os.path.join(workdir, "deliberate-error.html")
    with open(page, "w") as f:
        f.write("<!DOCTYPE html><html><body><p>x</p><script>console.error('iodiag deliberate error');"
                "no_such_function_iodiag();</script></body></html>")
    _, console, _ = browse(chromium, page, workdir, 400, 300)
    joined = "\n".join(console)
    if "iodiag deliberate error" not in joined or "no_such_function_iodiag" not in joined:
        raise Failure("the console check does not see a deliberate console.error and an uncaught exception "
                      f"(it would pass anything); chromium logged: {joined!r}")
    print("ok the console check sees a deliberate console.error and an uncaught exception")


def with_series(v1_path, out_path, seed=9):
    """A version-2 bundle: the recorded v1 fixture plus per-interval series made
    here (a fault from the middle on), so the renderer is tested on a real
    verdict with heatmaps whatever the collectors of this checkout record."""
    with open(v1_path) as f:
        b = json.load(f)
    rnd = random.Random(seed)
    n = 12
    b["schema_version"] = 2
    hists, values = [], []
    devices = sorted({h["labels"]["device"] for h in b["histograms"] if "device" in h.get("labels", {})})
    for dev in devices:
        for name in ("block.d2c_us", "block.q2c_us"):
            buckets = []
            for i in range(n):
                row = [0] * 16
                centre = 7 if i < n // 2 else 12
                for _ in range(rnd.randint(50, 400)):
                    row[max(0, min(15, centre + int(rnd.gauss(0, 1.2))))] += 1
                while row and row[-1] == 0:
                    row.pop()
                buckets.append(row)
            hists.append({"name": name, "labels": {"device": dev}, "unit": "us", "log2_buckets": buckets,
                          "provenance": {"kind": "test", "source": "made by report_browser_test.py"}})
    for op in ("read", "write"):
        hists.append({"name": "syscall.latency_us", "labels": {"op": op}, "unit": "us",
                      "log2_buckets": [[0, 0, 5 + i, 30, 2] if i < n // 2 else [0, 0, 1, 3, 0, 0, 0, 0, 0, 0, 4, 40]
                                       for i in range(n)],
                      "provenance": {"kind": "test", "source": "made by report_browser_test.py"}})
    for layer, before, after in (("dirty", 5e3, 8e5), ("device", 2e4, 3e4), ("cpu", 6e4, 7e4)):
        values.append({"name": "layer.time_us", "labels": {"layer": layer}, "unit": "us",
                       "values": [before if i < n // 2 else after for i in range(n)],
                       "provenance": {"kind": "test", "source": "made by report_browser_test.py"}})
    values.append({"name": "psi.io_some_pct", "labels": {}, "unit": "pct",
                   "values": [rnd.uniform(0, 5) if i < n // 2 else rnd.uniform(40, 90) for i in range(n)],
                   "provenance": {"kind": "test", "source": "made by report_browser_test.py"}})
    b["series"] = {"start_unix": b["window"]["start_unix"], "interval_s": b["window"]["duration_s"] / n,
                   "count": n, "histograms": hists, "values": values}
    with open(out_path, "w") as f:
        json.dump(b, f)
    return out_path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iodiag", required=True)
    ap.add_argument("--fixtures", help="tests/fixtures (the cases of the test suite)")
    ap.add_argument("--bundle", help="only this bundle")
    ap.add_argument("--after", help="with --bundle: the before/after report of the two")
    ap.add_argument("--keep", help="keep the pages and screenshots in this directory")
    args = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no chromium in PATH (apt-get install chromium; .ci/setup installs it)")
        return SKIP
    workdir = args.keep or tempfile.mkdtemp(prefix="iodiag-browser-")
    os.makedirs(workdir, exist_ok=True)
    try:
        check_console_detection(chromium, workdir)
        if args.bundle:
            cases = [("single", [args.bundle])]
            if args.after:
                cases = [("before-after", [args.bundle, args.after])]
        else:
            v1 = os.path.join(args.fixtures, "bundles", "dirty_throttle.json")
            v2 = with_series(v1, os.path.join(workdir, "dirty_throttle_series.json"))
            cases = [("v2-series", [v2]), ("v1-no-series", [v1]), ("before-after", [v1, v2])]
            series_dir = os.path.join(args.fixtures, "series")
            recorded = sorted(os.path.join(series_dir, f) for f in os.listdir(series_dir)
                              if f.endswith(".json")) if os.path.isdir(series_dir) else []
            for path in recorded:
                cases.append(("recorded-" + os.path.basename(path)[:-5], [path]))
            # Both sides with series: the pairs of heatmaps, each side its own
            # intervals, both on one scale.
            if recorded:
                cases.append(("before-after-series", [v2, recorded[0]]))
        for name, paths in cases:
            check_report(args.iodiag, chromium, workdir, name, paths)
        check_standalone_heatmap(args.iodiag, workdir, cases[0][1][-1] if not args.bundle else args.bundle)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
