#!/usr/bin/env bash
# A real single-host Ceph cluster for the live tests and the replay fixtures:
# one monitor, one manager and N BlueStore OSDs whose block devices are loop
# devices, all on 127.0.0.1, everything (config, keyrings, data, admin sockets,
# logs, backing files) inside one temporary directory. Nothing is written to
# /etc/ceph, /var/lib/ceph or /var/run/ceph.
#
#   cluster.sh up DIR [OSDS]      start (DIR must not exist; OSDS 2..3, default 3);
#                                 returns once every PG is active+clean
#   cluster.sh down DIR           stop daemons by PID, undo faults, detach loop
#                                 devices, remove DIR (safe to call twice)
#   cluster.sh status DIR         daemons, loop devices, `ceph -s`
#   cluster.sh env DIR            shell lines: CEPH_CONF, CEPH_KEYRING, run dir
#   cluster.sh load DIR SECONDS [THREADS] [BYTES]
#                                 client writes (rados bench) on the test pool
#   cluster.sh fault DIR slow-disk OSD_ID WRITE_IOPS
#                                 the OSD's backing I/O throttled (blkio v1 on the
#                                 disk under its loop device's backing file)
#   cluster.sh fault DIR cpu-starve CPU_PCT
#                                 every OSD in a cpu cgroup with that quota
#   cluster.sh fault DIR clear    undo the faults
#   cluster.sh run CMD...         up in a fresh temp dir, run CMD with the env
#                                 exported, then down (also on failure)
#   cluster.sh reap               tear down leftovers of clusters whose watchdog
#                                 died with them (also done by every `up`)
#
# Machine-wide state (loop devices, cgroups, daemons) is changed under the
# machine lock /run/lock/iodiag-live.lock, held by a watchdog from `up` to
# `down` (unless the caller already holds it: IODIAG_LIVE_LOCK_HELD=1). The
# watchdog also tears the cluster down when the process that started it dies
# (owner: $IODIAG_CEPH_OWNER or the caller's parent), so a killed test leaves
# nothing behind. Where the watchdog itself was killed (SIGKILL of the whole
# session, a restart of the machine's processes), the next `up` (or `reap`)
# finds what it left by its own names, under the machine lock: directories
# /tmp/iodiag-ceph-*, daemons whose command line names such a directory,
# loop devices backed by its backing/osdN.img, empty cgroups iodiag-ceph-*;
# and tears them down.
set -eEuo pipefail
self=$(readlink -f "$0")
source "$(dirname "$self")/../lib/loop_queue.sh"
cmd=${1:-}; shift || true

die() { echo "cluster.sh: $*" >&2; exit 2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

need_tools() {
  [[ $(id -u) -eq 0 ]] || die "needs root (loop devices, cgroups)"
  local t
  for t in ceph ceph-mon ceph-mgr ceph-osd ceph-authtool monmaptool rados losetup lsblk python3; do
    command -v "$t" >/dev/null || die "needs $t in PATH (packages ceph-mon ceph-mgr ceph-osd ceph-common)"
  done
}

# Undo entries, executed in reverse order by `down`. Kept in a file so that
# `down` from another process (the watchdog, a later shell) sees them.
undo_add() { printf '%s\n' "$1" >> "$dir/undo"; }

c() { ceph -c "$dir/ceph.conf" --connect-timeout 20 "$@"; }

start_daemon() {   # start_daemon NAME CMD... : foreground daemon in the background, PID recorded
  local name=$1; shift
  setsid "$@" -f </dev/null >>"$dir/log/$name.out" 2>&1 &
  echo $! > "$dir/pids/$name"
}

wait_for() {       # wait_for SECONDS WHAT CMD...
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || { echo "cluster.sh: timed out waiting for $what" >&2; return 1; }
    sleep 1
  done
}

all_clean() {      # every PG active+clean, and at least one PG
  c pg stat --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); s = d.get("pg_summary", d)
by = {x["name"]: x["num"] for x in s.get("num_pg_by_state", [])}
n = s.get("num_pgs", 0)
sys.exit(0 if n and by.get("active+clean", 0) == n else 1)'
}

osds_up() { [[ $(c osd stat --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])') == "$1" ]]; }

up() {
  dir=$1; local osds=${2:-3}
  need_tools
  [[ $osds =~ ^[23]$ ]] || die "OSDS must be 2 or 3"
  [[ ! -e $dir ]] || die "$dir exists"
  mkdir -p "$dir"/{pids,log,run,mon,mgr,osd,backing}
  dir=$(cd "$dir" && pwd)
  : > "$dir/undo"
  # The watchdog holds the machine lock and tears down when the owner dies.
  local owner=${IODIAG_CEPH_OWNER:-$PPID}
  setsid bash "$self" _watch "$dir" "$owner" </dev/null >>"$dir/log/watchdog.out" 2>&1 &
  echo $! > "$dir/watchdog.pid"
  wait_for 900 "the machine lock" test -e "$dir/locked" || { down "$dir"; exit 1; }
  reap "$dir"
  trap 'trap - ERR; echo "cluster.sh: up failed, tearing down (logs were in $dir/log)" >&2; tail -n 20 "$dir"/log/*.out >&2 || true; down "$dir"; exit 1' ERR

  local fsid port2 port1
  fsid=$(cat /proc/sys/kernel/random/uuid); port2=$(free_port); port1=$(free_port)
  cat > "$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$port2,v1:127.0.0.1:$port1]
public addr = 127.0.0.1
ms bind ipv6 = false
run dir = $dir/run
admin socket = $dir/run/\$cluster-\$name.asok
pid file = $dir/run/\$cluster-\$name.pid
log file = $dir/log/\$cluster-\$name.log
crash dir = $dir/crash
mon data = $dir/mon/\$cluster-\$id
mgr data = $dir/mgr/\$cluster-\$id
osd data = $dir/osd/\$cluster-\$id
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
# One host: replicas go to distinct OSDs, not hosts.
osd crush chooseleaf type = 0
osd pool default size = $osds
osd pool default min size = 2
osd pool default pg autoscale mode = off
mon allow pool delete = true
# The temporary directory shares the host's disk: its free space is not the
# cluster's concern. Cephx without the pre-Pacific global_id reclaim.
mon data avail warn = 2
auth allow insecure global id reclaim = false
mon warn on pool no redundancy = false
# Sane on a small disk: no full flag before a test fills 90 %.
mon osd full ratio = .95
mon osd backfillfull ratio = .92
mon osd nearfull ratio = .90
mon max pg per osd = 500
# Small machine: small caches, few threads.
osd memory target = 939524096
bluestore cache autotune = false
bluestore cache size = 67108864
osd op num shards = 2
osd op num threads per shard = 1
osd objectstore = bluestore
# Keep every op of the window in the history the collector reads.
osd op history size = 200
osd op history duration = 60
debug ms = 0/0
debug osd = 0/0
debug bluestore = 0/0
debug rocksdb = 0/0
debug mon = 0/0
debug paxos = 0/0
[mon]
mon initial members = a
keyring = \$mon_data/keyring
[osd]
keyring = \$osd_data/keyring
[client]
keyring = $dir/ceph.client.admin.keyring
# Clients (rados, the ceph CLI) get sockets of their own, as librbd clients
# do on real hosts: the collector must tell them from the OSDs'.
admin socket = $dir/run/\$cluster-\$name.\$pid.\$cctid.asok
[mgr]
keyring = \$mgr_data/keyring
mgr initial modules =
mgr/devicehealth/enable_monitoring = false
EOF
  local conf=$dir/ceph.conf
  ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool --create-keyring "$dir/ceph.client.admin.keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
  ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/ceph.client.admin.keyring" >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port2,v1:127.0.0.1:$port1]" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring"
  start_daemon mon.a ceph-mon -c "$conf" -i a
  wait_for 60 "the monitor" c mon stat

  mkdir -p "$dir/mgr/ceph-x"
  c auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' > "$dir/mgr/ceph-x/keyring"
  start_daemon mgr.x ceph-mgr -c "$conf" -i x

  local i
  for ((i = 0; i < osds; i++)); do make_osd "$i"; done
  wait_for 120 "$osds OSDs up" osds_up "$osds"
  c osd pool create bench 32 32 replicated >/dev/null 2>&1
  c osd pool application enable bench rados >/dev/null 2>&1
  wait_for 180 "every PG active+clean" all_clean
  trap - ERR
  echo "cluster up: $dir ($osds OSDs)"
}

make_osd() {       # make_osd ID: a loop device over a sparse file, BlueStore on it, started
  local id=$1 uuid key back dev data
  back=$dir/backing/osd$id.img
  truncate -s 3G "$back"
  # Direct I/O on the backing file: the OSD's writes reach the disk (and its
  # blkio throttle) instead of piling up in the page cache.
  dev=$(losetup -f)
  undo_add "$(loop_queue_restore "$dev")"   # undone backwards: after the detach
  losetup --direct-io=on "$dev" "$back"
  undo_add "detach_loop $dev $back"
  echo "$dev" > "$dir/osd$id.dev"
  uuid=$(cat /proc/sys/kernel/random/uuid); key=$(ceph-authtool --gen-print-key)
  data=$dir/osd/ceph-$id; mkdir -p "$data"
  # `osd new` registers the OSD and its cephx key (osd, mon and mgr profiles).
  printf '{"cephx_secret": "%s"}' "$key" > "$data/new.json"
  [[ $(c osd new "$uuid" -i "$data/new.json") == "$id" ]] || die "osd new gave another id than $id"
  rm -f "$data/new.json"
  ceph-authtool --create-keyring "$data/keyring" --name "osd.$id" --add-key "$key" >/dev/null
  # What ceph-volume does without LVM: the data dir's `block` names the device.
  ln -s "$dev" "$data/block"
  ceph-osd -c "$dir/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" >>"$dir/log/osd.$id.out" 2>&1
  start_daemon "osd.$id" ceph-osd -c "$dir/ceph.conf" -i "$id"
}

ours() {           # ours PID: the process's command line names this cluster's directory
  tr '\0' ' ' 2>/dev/null < "/proc/$1/cmdline" | grep -qF "$dir/"
}

detach_loop() {    # detach_loop DEV BACKING_FILE: only while DEV is still backed by that file
  local back
  back=$(losetup -nO BACK-FILE "$1" 2>/dev/null) || return 0
  [[ ${back% (deleted)} == "$2" ]] && losetup -d "$1"
  return 0
}

stop_pid() {       # TERM, wait up to 15 s, then KILL; only the PID recorded at start, if still ours
  local pid=$1 t
  kill -0 "$pid" 2>/dev/null || return 0
  ours "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((t = 0; t < 150; t++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for ((t = 0; t < 50; t++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

down() {
  dir=$1
  [[ -d $dir && -e $dir/undo ]] || { rm -rf "$dir" 2>/dev/null || true; return 0; }
  local f
  # Loads first, then faults (a frozen cgroup would hold a daemon's exit), then
  # the daemons (OSDs before mgr and mon), then the recorded undo entries
  # (loop devices), then the directory.
  for f in "$dir"/pids/load.*; do [[ -e $f ]] && stop_pid "$(cat "$f")" && rm -f "$f"; done
  clear_faults
  for f in "$dir"/pids/osd.* "$dir"/pids/mgr.* "$dir"/pids/mon.*; do
    [[ -e $f ]] && stop_pid "$(cat "$f")" && rm -f "$f"
  done
  if [[ -s $dir/undo ]]; then
    local lines; mapfile -t lines < "$dir/undo"
    for ((f = ${#lines[@]} - 1; f >= 0; f--)); do eval "${lines[f]}" >/dev/null 2>&1 || true; done
  fi
  : > "$dir/undo"
  # The watchdog last: it holds the machine lock until everything is undone.
  local wd=""
  [[ -e $dir/watchdog.pid ]] && wd=$(cat "$dir/watchdog.pid")
  rm -rf "$dir"
  if [[ -n $wd && $wd != "${WATCHDOG_SELF:-}" ]] && watchdog_of "$dir" "$wd"; then
    kill -TERM "$wd" 2>/dev/null || true
    # It exits after its current one-second sleep.
    local t
    for ((t = 0; t < 30; t++)); do kill -0 "$wd" 2>/dev/null || break; sleep 0.1; done
  fi
  return 0
}

watchdog_of() {    # watchdog_of DIR PID: PID is DIR's watchdog (not a PID reused since)
  tr '\0' ' ' 2>/dev/null < "/proc/$2/cmdline" | grep -qF "_watch $1 "
}

# Leftovers of clusters whose watchdog died with them, recognised by this
# script's own names; under the machine lock, so no other cluster of this
# script is being set up or torn down meanwhile. MINE (the caller's cluster)
# is spared.
reap() {
  local mine=${1:-} d pid wd cmd back dev cg
  stale() {        # stale DIR: not MINE and no live watchdog
    [[ $1 != "$mine" ]] || return 1
    wd=$(cat "$1/watchdog.pid" 2>/dev/null) || return 0
    ! watchdog_of "$1" "$wd"
  }
  for d in /tmp/iodiag-ceph-*; do
    [[ -d $d ]] && stale "$d" || continue
    echo "cluster.sh: tearing down $d, left by a cluster whose watchdog is gone" >&2
    (down "$d")
  done
  # Daemons and loads started with `-c /tmp/iodiag-ceph-X/ceph.conf` whose
  # directory is stale or gone, stopped by PID.
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    cmd=$(tr '\0' ' ' 2>/dev/null < "$d/cmdline") || continue
    [[ $cmd =~ ^[^\ ]*(ceph-osd|ceph-mon|ceph-mgr|rados)\ -c\ (/tmp/iodiag-ceph-[A-Za-z0-9]+)/ceph.conf ]] || continue
    stale "${BASH_REMATCH[2]}" || continue
    echo "cluster.sh: stopping ${BASH_REMATCH[1]} (pid $pid) of ${BASH_REMATCH[2]}" >&2
    (dir=${BASH_REMATCH[2]}; stop_pid "$pid")
  done
  # Loop devices over such a directory's backing files.
  while read -r dev back; do
    [[ ${back% (deleted)} =~ ^(/tmp/iodiag-ceph-[A-Za-z0-9]+)/backing/osd[0-9]+\.img$ ]] || continue
    stale "${BASH_REMATCH[1]}" || continue
    echo "cluster.sh: detaching $dev (backed by $back)" >&2
    losetup -d "$dev" || true
  done < <(losetup -nl -O NAME,BACK-FILE 2>/dev/null)
  # Fault cgroups are named after the `fault` call's PID, not the directory:
  # those left empty are removed (a live one holds its OSDs; rmdir refuses it).
  for cg in /sys/fs/cgroup/blkio/iodiag-ceph-* /sys/fs/cgroup/cpu/iodiag-ceph-*; do
    [[ -d $cg && -z $(cat "$cg/cgroup.procs" 2>/dev/null) ]] && rmdir "$cg" 2>/dev/null && echo "cluster.sh: removed empty cgroup $cg" >&2
  done
  return 0
}

watch() {          # _watch DIR OWNER: holds the lock; tears down when OWNER exits
  dir=$1; local owner=$2
  if [[ ${IODIAG_LIVE_LOCK_HELD:-0} != 1 ]]; then
    exec 9>/run/lock/iodiag-live.lock
    flock 9
  fi
  [[ -d $dir ]] || exit 0
  touch "$dir/locked"
  export WATCHDOG_SELF=$$
  trap 'exit 0' TERM
  while [[ -d $dir ]] && kill -0 "$owner" 2>/dev/null; do sleep 1; done
  [[ -d $dir ]] && { echo "owner $owner gone: tearing down $dir"; down "$dir"; }
  exit 0
}

osd_pid() { cat "$dir/pids/osd.$1"; }

fault() {
  dir=$1; local what=${2:?fault kind}
  [[ -d $dir ]] || die "$dir: no cluster"
  case $what in
    slow-disk)
      # The OSD's BlueStore writes go to its loop device; the loop worker writes
      # the backing file on the OSD's behalf, charged to the OSD's blkio group,
      # so a write-IOPS limit on the disk under the backing file makes the loop
      # device itself slow (its D2C), as a failing or overloaded disk would.
      local id=${3:?osd id} iops=${4:?write iops} back majmin cg
      back=$(df --output=source "$dir/backing" | tail -1)
      majmin=$(lsblk -ndo MAJ:MIN "$back" | tr -d ' ')
      cg=/sys/fs/cgroup/blkio/iodiag-ceph-$$-osd$id
      mkdir "$cg"; echo "rmdir $cg" >> "$dir/faults"
      echo "$majmin $iops" > "$cg/blkio.throttle.write_iops_device"
      move_to "$(osd_pid "$id")" blkio "$cg" ;;
    cpu-starve)
      # Every OSD in one cpu cgroup with a CFS quota: ops wait for a CPU in the
      # op queue and the messenger, whatever the disks do.
      local pct=${3:?cpu percent} cg f
      cg=/sys/fs/cgroup/cpu/iodiag-ceph-$$-cpu
      mkdir "$cg"; echo "rmdir $cg" >> "$dir/faults"
      echo 100000 > "$cg/cpu.cfs_period_us"
      echo $((pct * 1000)) > "$cg/cpu.cfs_quota_us"
      for f in "$dir"/pids/osd.*; do move_to "$(cat "$f")" cpu "$cg"; done ;;
    clear) clear_faults ;;
    *) die "unknown fault $what" ;;
  esac
}

move_to() {        # move_to PID CONTROLLER CGROUP_DIR: the whole process; undone by moving it back
  local pid=$1 ctl=$2 to=$3 from
  from=$(awk -F: -v c="$ctl" '$1 != "0" && ("," $2 ",") ~ ("," c ",") {print $3}' "/proc/$pid/cgroup")
  echo "$pid" > "$to/cgroup.procs"
  echo "ours $pid && echo $pid > /sys/fs/cgroup/$ctl${from%/}/cgroup.procs" >> "$dir/faults"
}

clear_faults() {
  [[ -s $dir/faults ]] || return 0
  local lines i; mapfile -t lines < "$dir/faults"
  for ((i = ${#lines[@]} - 1; i >= 0; i--)); do eval "${lines[i]}" >/dev/null 2>&1 || true; done
  : > "$dir/faults"
}

load() {           # load DIR SECONDS [THREADS] [BYTES]: client writes in the background
  dir=$1; local secs=${2:?seconds} threads=${3:-8} bytes=${4:-4096}
  setsid rados -c "$dir/ceph.conf" -p bench bench "$secs" write -t "$threads" -b "$bytes" \
    --run-name "load$$" </dev/null >>"$dir/log/load.out" 2>&1 &
  echo $! > "$dir/pids/load.$!"
  echo $!
}

env_lines() {
  dir=$1
  echo "CEPH_CONF=$dir/ceph.conf"
  echo "CEPH_KEYRING=$dir/ceph.client.admin.keyring"
  echo "IODIAG_CEPH_RUN_DIR=$dir/run"
}

status() {
  dir=$1
  local f
  for f in "$dir"/pids/*; do
    [[ -e $f ]] || continue
    printf '%-8s pid %-7s %s\n' "${f##*/}" "$(cat "$f")" "$(kill -0 "$(cat "$f")" 2>/dev/null && echo running || echo gone)"
  done
  for f in "$dir"/osd*.dev; do [[ -e $f ]] && echo "${f##*/}: $(cat "$f")"; done
  c -s
}

case $cmd in
  up) up "${1:?DIR}" "${2:-3}" ;;
  down) down "${1:?DIR}" ;;
  status) status "${1:?DIR}" ;;
  env) env_lines "${1:?DIR}" ;;
  load) load "$@" ;;
  fault) fault "$@" ;;
  _watch) watch "$@" ;;
  reap)
    need_tools
    if [[ ${IODIAG_LIVE_LOCK_HELD:-0} != 1 ]]; then exec 9>/run/lock/iodiag-live.lock; flock 9; fi
    reap ;;
  run)
    [[ $# -gt 0 ]] || die "run CMD..."
    tmp=$(mktemp -d /tmp/iodiag-ceph-XXXXXX); rmdir "$tmp"
    trap 'down "$tmp"' EXIT
    IODIAG_CEPH_OWNER=$$ up "$tmp" "${IODIAG_CEPH_OSDS:-3}"
    while IFS= read -r line; do export "${line?}"; done < <(env_lines "$tmp")
    export IODIAG_CEPH_DIR=$tmp
    "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
esac
