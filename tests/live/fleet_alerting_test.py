#!/usr/bin/env python3
"""The fleet path end to end, with the real components.

iodiag check --prometheus FILE -> node_exporter (textfile collector on a
temporary directory) -> Prometheus (scrape and rule evaluation every second,
the shipped contrib/prometheus/iodiag-alerts.yml) -> Alertmanager (the shipped
contrib/alertmanager/iodiag-route.yml, its receiver pointed at a webhook inside
this test, its waits shortened) -> webhook.

1. A healthy target: the check exits 0, Prometheus scrapes its textfile and
   evaluates the rules, and no alert fires or reaches the webhook. The check
   watches this test's own idle process (--pid): the test command runs the
   sanitized tests (chromium among them) beside the live tests, and a whole
   machine that busy is not healthy: iodiag once rightly named a chromium
   process run beside this test waiting for CPUs behind clang.
2. A real fault (the lab's dirty_throttle: a buffered writer on a loop device
   under a tiny vm.dirty_bytes, every change undone by the lab script): the
   check exits 1 or 2, and the alert of its top finding reaches the webhook
   with the rule id and the verdict fingerprint as labels.
promtool check metrics passes on both textfiles. Each daemon listens on a free
localhost port and is stopped by its PID on every exit path. Holds the
machine lock (the fault changes sysctls). Exit 77 (ctest: skipped) with the
reason when root or a component is missing.

  tests/live/fleet_alerting_test.py --iodiag build/iodiag [--source .]
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_support import hold_machine_lock, stop_process  # noqa: E402

SKIP = 77
TOOLS = {
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "prometheus-node-exporter": "prometheus-node-exporter",
    "prometheus-alertmanager": "prometheus-alertmanager",
}


def log(msg):
    print(f"[fleet] {msg}", flush=True)


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def wait_until(what, pred, timeout, interval=0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except (OSError, ValueError) as e:   # not listening yet, half-written answer
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


class Webhook:
    """Alertmanager's webhook receiver: keeps every notification it is sent."""

    def __init__(self):
        self.notifications = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.notifications.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/iodiag"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self):
        return [a for n in self.notifications for a in n.get("alerts", [])]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Daemons:
    """Started processes, each stopped by its PID (TERM, then KILL) on exit."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.procs = []

    def start(self, name, argv):
        out = open(os.path.join(self.logdir, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append((name, p, out))
        log(f"started {name} (pid {p.pid})")
        return p

    def check_alive(self):
        for name, p, _ in self.procs:
            if p.poll() is not None:
                raise AssertionError(f"{name} exited with {p.returncode}; its log:\n{self.tail(name)}")

    def tail(self, name, lines=30):
        try:
            with open(os.path.join(self.logdir, name + ".log")) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self):
        for name, p, out in reversed(self.procs):
            stop_process(p, timeout=10)
            out.close()
            log(f"stopped {name} (pid {p.pid})")
        self.procs = []


def alertmanager_config(example, webhook_url):
    """The shipped route with the receiver pointed here and the waits made short."""
    text = open(example).read()
    for old, new in [
        ("url: http://127.0.0.1:9095/iodiag", f"url: {webhook_url}"),
        ("group_wait: 30s", "group_wait: 1s"),
        ("group_interval: 5m", "group_interval: 1s"),
        ("repeat_interval: 24h", "repeat_interval: 1h"),
    ]:
        assert old in text, f"{example} no longer has '{old}': update this test"
        text = text.replace(old, new)
    return text


def prometheus_config(rules, node_port, am_port):
    # JSON is YAML: no YAML writer needed.
    return json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [rules],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
        "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{node_port}"]}]}],
    }, indent=1)


def query(prom, expr):
    _, body = get(f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    return json.loads(body)["data"]["result"]


def firing_iodiag_alerts(prom):
    _, body = get(f"http://127.0.0.1:{prom}/api/v1/alerts")
    return [a for a in json.loads(body)["data"]["alerts"] if a["labels"].get("alertname") == "IodiagFinding"]


def written_run_time(textfile):
    for line in open(textfile):
        if line.startswith("iodiag_last_run_timestamp_seconds{"):
            return float(line.split()[-1])
    raise AssertionError(f"{textfile} has no iodiag_last_run_timestamp_seconds")


def wait_scraped_and_evaluated(prom, textfile):
    """Until Prometheus holds the run time just written and has evaluated the
    alert rules after that scrape, twice."""
    written = written_run_time(textfile)

    def scraped():
        r = query(prom, "iodiag_last_run_timestamp_seconds")
        return r and abs(float(r[0]["value"][1]) - written) < 1e-3

    wait_until("Prometheus to scrape the textfile", scraped, 30)
    seen = time.time()

    def evaluated_twice():
        _, body = get(f"http://127.0.0.1:{prom}/api/v1/rules")
        groups = json.loads(body)["data"]["groups"]
        last = [g.get("lastEvaluation", "") for g in groups if g["name"] == "iodiag"]
        return last and time.time() > seen + 2.5

    wait_until("two rule evaluations after the scrape", evaluated_twice, 30)


def promtool_check_metrics(textfile):
    with open(textfile) as f:
        r = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), \
        f"promtool check metrics on {textfile}:\n{r.stdout}{r.stderr}"


def dirty_sysctls():
    names = ["dirty_bytes", "dirty_ratio", "dirty_background_bytes", "dirty_background_ratio"]
    return {n: open(f"/proc/sys/vm/{n}").read().strip() for n in names}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iodiag", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    iodiag = os.path.abspath(args.iodiag)

    if os.geteuid() != 0:
        skip("needs root (BPF collectors, loop devices, vm.dirty_bytes)")
    for tool, package in TOOLS.items():
        if not shutil.which(tool):
            skip(f"needs {tool} (Debian package {package})")
    for tool in ["fio", "losetup", "mkfs.ext4"]:
        if not shutil.which(tool):
            skip(f"needs {tool}")

    lock = hold_machine_lock()
    work = tempfile.mkdtemp(prefix="iodiag-fleet-")
    textdir = os.path.join(work, "textfile")
    os.mkdir(textdir)
    textfile = os.path.join(textdir, "iodiag.prom")
    daemons = Daemons(work)
    webhook = Webhook()
    # ctest's timeout sends SIGTERM first: stop the daemons then too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sysctls_before = dirty_sysctls()
    t0 = time.monotonic()
    try:
        node_port, prom_port, am_port = free_port(), free_port(), free_port()
        am_cfg = os.path.join(work, "alertmanager.yml")
        with open(am_cfg, "w") as f:
            f.write(alertmanager_config(os.path.join(source, "contrib/alertmanager/iodiag-route.yml"), webhook.url))
        prom_cfg = os.path.join(work, "prometheus.yml")
        with open(prom_cfg, "w") as f:
            f.write(prometheus_config(os.path.join(source, "contrib/prometheus/iodiag-alerts.yml"), node_port, am_port))

        daemons.start("alertmanager", [
            "prometheus-alertmanager", f"--config.file={am_cfg}", f"--storage.path={work}/am",
            f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="])
        daemons.start("node_exporter", [
            "prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{node_port}",
            "--collector.disable-defaults", "--collector.textfile", f"--collector.textfile.directory={textdir}"])
        daemons.start("prometheus", [
            "prometheus", f"--config.file={prom_cfg}", f"--storage.tsdb.path={work}/tsdb",
            f"--web.listen-address=127.0.0.1:{prom_port}"])
        for name, url in [("alertmanager", f"http://127.0.0.1:{am_port}/-/ready"),
                          ("node_exporter", f"http://127.0.0.1:{node_port}/metrics"),
                          ("prometheus", f"http://127.0.0.1:{prom_port}/-/ready")]:
            try:
                wait_until(f"{name} to answer", lambda: get(url)[0] == 200, 60)
            except AssertionError:
                daemons.check_alive()
                raise
        log(f"daemons ready after {time.monotonic() - t0:.1f} s")

        # 1. A healthy target (this idle process): OK, scraped, evaluated, and
        # no alert anywhere. --no-history: a test neither reads nor leaves runs
        # in /var/lib/iodiag.
        r = subprocess.run([iodiag, "check", "--duration", "2", "--no-history", "--pid", str(os.getpid()),
                            "--prometheus", textfile], capture_output=True, text=True)
        log(f"healthy check: exit {r.returncode}: {r.stdout.splitlines()[0] if r.stdout else ''}")
        assert r.returncode == 0, f"the idle target's check is not OK:\n{r.stdout}\n{r.stderr}"
        promtool_check_metrics(textfile)
        wait_scraped_and_evaluated(prom_port, textfile)
        time.sleep(2)   # Alertmanager's group_wait (1 s) and the notification
        daemons.check_alive()
        assert not firing_iodiag_alerts(prom_port), firing_iodiag_alerts(prom_port)
        assert not webhook.alerts(), f"the webhook got alerts for a healthy machine: {webhook.notifications}"
        log("healthy: no alert")

        # 2. A real fault while the check runs.
        verdict_file = os.path.join(work, "fault-verdict.json")
        rc_file = os.path.join(work, "fault-rc")
        env = dict(os.environ, IODIAG=iodiag)
        env["IODIAG_LAB_RUN"] = (f"{iodiag} check --duration 3 --no-history --format json --prometheus {textfile} "
                                 f"> {verdict_file}; echo $? > {rc_file}")
        lab = subprocess.run([os.path.join(source, "tests/lab/scenario.sh"), "dirty_throttle", "-"],
                             env=env, capture_output=True, text=True, timeout=300)
        assert lab.returncode == 0, f"lab scenario failed:\n{lab.stdout}\n{lab.stderr}"
        rc = int(open(rc_file).read())
        verdict = json.load(open(verdict_file))
        log(f"fault check: exit {rc}: {verdict['check']['status_line'][:160]}")
        assert rc in (1, 2), f"check under the fault exited {rc}: {verdict['check']['status_line']}"
        assert verdict["findings"], "no finding under the fault"
        top = verdict["findings"][0]["rule_id"]
        fingerprint = verdict["fingerprint"]
        promtool_check_metrics(textfile)

        def delivered():
            for a in webhook.alerts():
                labels = a["labels"]
                if (a["status"] == "firing" and labels.get("alertname") == "IodiagFinding"
                        and labels.get("rule_id") == top and labels.get("fingerprint") == fingerprint):
                    return a
            return None

        alert = wait_until(f"an alert for {top} (fingerprint {fingerprint}) at the webhook", delivered, 60)
        daemons.check_alive()
        log(f"fault: the webhook got {alert['labels']}")
        group = [n for n in webhook.notifications if any(a is alert for a in n.get("alerts", []))][0]
        assert group["groupLabels"].get("fingerprint") == fingerprint, group["groupLabels"]
        log(f"passed in {time.monotonic() - t0:.1f} s")
        return 0
    finally:
        daemons.stop()
        webhook.close()
        after = dirty_sysctls()
        shutil.rmtree(work, ignore_errors=True)
        if lock:
            lock.close()
        if after != sysctls_before:
            print(f"vm.dirty_* not restored: before {sysctls_before}, after {after}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
