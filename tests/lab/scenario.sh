#!/usr/bin/env bash
# Reproduces one root cause for real on a loop device and records iodiag's
# evidence bundle while it happens. Used to make the replay fixtures in
# tests/fixtures/bundles/ (and by hand, to see a verdict on a known fault).
#
#   tests/lab/scenario.sh NAME OUT.json [SECONDS]
#   IODIAG_LAB_RUN='command' tests/lab/scenario.sh NAME - : runs the command during the fault instead
#
# NAME: idle | cached_reads | device_saturated | slow_device | dirty_throttle | fsync_storm |
#       tiny_nr_requests | memcg_reader | blkio_throttle | busy_healthy | qd1_fast |
#       classless_slow | stacked_slow | loop_cgroup_limit | cpu_starved | lock_contention |
#       pgbench_writer | two_causes | two_apps | two_apps_device | hdd_seek | hdd_seek_known |
#       stacked_slow_busy_disk | bfq_idling | stall_tail | stacked_tail | db_commits | app_alone |
#       neighbor_direct | neighbor_buffered | neighbor_cpu | neighbor_control |
#       bulk_reader_neighbor | same_name_neighbor | shell_writer_neighbor |
#       shared_app_alone | shared_light | shared_bulk_alone | readahead_off | readahead_random |
#       sync_mount | sync_mount_own | dirsync_mount | dirsync_own | data_journal | data_journal_light | nr_requests_low |
#       nr_requests_enough | ioprio_idle | ioprio_idle_alone | max_sectors_low | max_sectors_random |
#       discard_slow | discard_light
# IODIAG_LAB_GT=FILE: also record ground truth for the same window into FILE
# (tests/lab/ground_truth.bt: bpftrace on tracepoints, not iodiag) for the
# processes the scenario marks as its victims; used by accuracy_matrix.py.
# IODIAG_LAB_FS=ext4|xfs|btrfs (default ext4): the filesystem of the scenarios
# that make one (cached_reads, dirty_throttle, fsync_storm, memcg_reader).
# Parameters: each scenario reads its sizes, rates and thread counts from
# IODIAG_LAB_<NAME> variables with the defaults it documents (`p NAME DEFAULT`
# below); tests/lab/draws.py draws them at random for the accuracy matrix.
# IODIAG_LAB_FAULT=0: the same workload without the injected fault (the
# unfaulted baseline of a draw). IODIAG_LAB_BASELINE=1: record only the ground
# truth (IODIAG_LAB_GT), no iodiag bundle.
# IODIAG_LAB_APP=fio|sqlite|postgres|redis: the application of the scenarios
# that take one (db_commits, app_alone, cpu_starved).
# Needs root, fio, losetup, mkfs.$IODIAG_LAB_FS. Every change (sysctl, queue
# setting, cgroup, mount, loop device) is undone on exit, also on failure.
set -euo pipefail
name=${1:?scenario name}; out=${2:?output bundle}; secs=${3:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
iodiag=${IODIAG:-$here/build/iodiag}
fs=${IODIAG_LAB_FS:-ext4}
case $fs in
  ext4|xfs|btrfs) command -v "mkfs.$fs" >/dev/null || { echo "mkfs.$fs not found" >&2; exit 2; } ;;
  *) echo "IODIAG_LAB_FS=$fs: ext4, xfs or btrfs" >&2; exit 2 ;;
esac
# One machine-wide lock with the live tests and benchmarks: they change the
# same sysctls and queue settings and would skew each other's latencies.
if [[ ${IODIAG_LIVE_LOCK_HELD:-0} != 1 ]]; then
  exec 9>/run/lock/iodiag-live.lock && flock 9
  export IODIAG_LIVE_LOCK_HELD=1
fi
# p NAME DEFAULT: the scenario parameter IODIAG_LAB_NAME, or its default.
p() { local v="IODIAG_LAB_$1"; echo "${!v:-$2}"; }
fault=$(p FAULT 1)
work=$(mktemp -d /tmp/iodiag-lab-XXXXXX)
undo=()
cleanup() {
  for ((i=${#undo[@]}-1; i>=0; i--)); do eval "${undo[i]}" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # a signal ends the script through the EXIT trap: nothing is left behind

source "$here/tests/lib/loop_queue.sh"
loop_attach() {   # loop_attach FILE [LOSETUP_OPTION...] -> sets $dev to the /dev/loopN now over FILE
  # Its queue settings as found come back after it is detached (undo runs
  # backwards: the detach, then the settings); it starts from the defaults.
  dev=$(losetup -f)
  undo+=("$(loop_queue_restore "$dev")")
  losetup "${@:2}" "$dev" "$1"
  undo+=("losetup -d $dev")
  queue_defaults "/sys/block/$(basename "$dev")"
}
queue_defaults() {   # queue_defaults /sys/block/loopN
  # A loop device keeps its queue settings across detach: start from the
  # kernel's defaults (no scheduler, a request per tag, writeback throttling
  # at its default target), not from a previous user's. (A wbt_lat_usec of 0
  # left on loop0 by an earlier session made a draw of "wbt on" run with it
  # off, seed 91001.)
  echo none > "$1/queue/scheduler"; cat "$1/mq/0/nr_tags" > "$1/queue/nr_requests"
  echo -1 > "$1/queue/wbt_lat_usec" 2>/dev/null || true
  # the kernel's request size limit: the device's, at most 1280 KiB (BLK_DEF_MAX_SECTORS_CAP)
  local m; m=$(cat "$1/queue/max_hw_sectors_kb"); ((m > 1280)) && m=1280
  echo "$m" > "$1/queue/max_sectors_kb"
}
loop_on() {   # loop_on DIR SIZE_MB -> sets $dev to /dev/loopN
  # Sets a variable instead of printing: called as $(loop_on ...) it would run
  # in a subshell and its undo entry would be lost with it.
  local f; f=$(mktemp "$1/iodiag-lab-XXXXXX.img"); truncate -s "${2}M" "$f"
  undo+=("rm -f $f")
  loop_attach "$f"
}
slow_loop_on() {   # slow_loop_on MODEL SIZE_MB [BACKDIR] -> $dev: a loop device over a file on tests/lab/slowfs.py
  # BACKDIR ($work/slowback): where slowfs keeps the file, disk.img (kept if it exists: made beforehand)
  local back=${3:-$work/slowback} prio=()
  mkdir -p "$back" "$work/slowfs"; truncate -s "${2}M" "$back/disk.img"
  # A capped volume's queue is the model's timing alone: its daemon (Python,
  # a CPU's work per request) runs ahead of the machine's other programs, as
  # a disk's own processor does not wait for the host's CPUs.
  [[ $1 == cap:* ]] && prio=(nice -n -10)
  setsid "${prio[@]}" /usr/bin/python3 "$here/tests/lab/slowfs.py" "$back" "$work/slowfs" "$1" >/dev/null 2>&1 &
  local pid=$!; undo+=("umount -l $work/slowfs; kill $pid")
  for _ in $(seq 100); do mountpoint -q "$work/slowfs" && break; sleep 0.1; done
  loop_attach "$work/slowfs/disk.img" --direct-io=on
}
scheduled_loop_on() {   # scheduled_loop_on SIZE_MB SCHED -> $dev over BACKING (/tmp: the disk, direct I/O;
                        # /dev/shm: memory) under scheduler SCHED (parameter SCHED, that default); $q its queue
  loop_on "$(p BACKING /tmp)" "$1"
  [[ $(p BACKING /tmp) == /tmp ]] && { losetup --direct-io=on "$dev" 2>/dev/null || true; }
  q=/sys/block/$(basename "$dev")/queue
  echo "$(p SCHED "$2")" > "$q/scheduler"
}
mkfs_on() {   # mkfs_on DEV|FILE: makes $fs on it (quiet, over any old signature)
  case $fs in
    ext4)  mkfs.ext4 -q -F "$1" ;;
    xfs)   mkfs.xfs -q -f "$1" ;;
    btrfs) mkfs.btrfs -q -f "$1" ;;
  esac
}
fs_on() {     # fs_on DEV DIR: makes $fs on DEV and mounts it on DIR
  mkfs_on "$1"
  mkdir "$2"; mount "$1" "$2"; undo+=("umount $2 || umount -l $2")
}
# set_dirty_bytes dirty|dirty_background BYTES: vm.<which>_bytes; the limit in
# force before (bytes or ratio) comes back on exit.
set_dirty_bytes() {
  local bytes ratio
  bytes=$(cat /proc/sys/vm/$1_bytes) ratio=$(cat /proc/sys/vm/$1_ratio)
  # Writing one of a (bytes, ratio) pair zeroes the other: put back whichever was in force.
  if [[ $bytes -ne 0 ]]; then undo+=("echo $bytes > /proc/sys/vm/$1_bytes"); else undo+=("echo $ratio > /proc/sys/vm/$1_ratio"); fi
  echo "$2" > /proc/sys/vm/$1_bytes
}
tiny_dirty_limits() {   # vm.dirty_bytes 2 MiB, background 1 MiB; the previous limits come back on exit
  set_dirty_bytes dirty $((2*1024*1024))
  set_dirty_bytes dirty_background $((1024*1024))
}
bg() { setsid "$@" >/dev/null 2>&1 & local pid=$!; undo+=("kill -TERM -$pid; sleep 0.5; kill -KILL -$pid"); }
# The victims: the processes whose latency the injected cause hurts. They run in
# one cgroup v2 directory so the ground truth can follow them (and only them).
victim_cg=/sys/fs/cgroup/unified/iodiag-victim-$$
# Removed with retries: a victim just killed may not have left the group yet
# (PostgreSQL's backends take a moment), and rmdir of a busy group fails.
victim_dir() {
  [[ -d $victim_cg ]] && return
  mkdir "$victim_cg"
  undo+=("for _ in \$(seq 50); do rmdir $victim_cg 2>/dev/null && break; sleep 0.1; done")
}
# victim [CGROUP_PROCS_FILE...] -- CMD...: CMD in the victim cgroup (and in the given v1 groups)
victim() {
  victim_dir; local files=("$victim_cg/cgroup.procs")
  while [[ $1 != -- ]]; do files+=("$1"); shift; done; shift
  local f enter=""; for f in "${files[@]}"; do enter+="echo \$\$ > $f; "; done
  bg sh -c "$enter exec \"\$@\"" victim "$@"
}
# The neighbor of the contention scenarios, in a cgroup of its own shaped as a
# systemd unit: neighbor_unit NAME makes /iodiag-lab-PID.slice/NAME (v2, in the
# unified hierarchy, and v1 memory; with BLKIO=1 also the v1 blkio group of that
# path, where the kernel charges its bios), so iodiag can name it as people do,
# and tells the matrix which cgroup the ground truth's (v2) id of it is.
# neighbor CMD...: CMD as the neighbor (in that unit once made), only with the fault.
nb_enter=""
neighbor_unit() {
  local slice=iodiag-lab-$$.slice unit=iodiag-lab-$$.slice/$1 h hierarchies=(unified memory)
  # As systemd places a unit on a host with v1 controllers: its group in the
  # unified hierarchy and in the v1 memory one (MemoryAccounting), so that
  # its v1 memory group is the unit's and not the group of whatever started
  # the lab (here every process's memory group is the sandbox's); blkio only
  # with BLKIO=1 (IOAccounting), the draws without it leave writeback and
  # the neighbor's bios to the root blkcg.
  if [[ $(p BLKIO 0) == 1 ]]; then hierarchies+=(blkio); fi
  for h in "${hierarchies[@]}"; do
    mkdir -p "/sys/fs/cgroup/$h/$unit"
    # Last made, first removed: the unit, then its slice (retried: a killed
    # neighbor may not have left the group yet). What is still in the unit is
    # the neighbor's: a loop's or a script's child outlives the shell that was
    # killed (seed 61's shell_writer_neighbor left its slice behind), so it
    # is killed too.
    undo+=("rmdir /sys/fs/cgroup/$h/$slice" "for _ in \$(seq 50); do kill -9 \$(cat /sys/fs/cgroup/$h/$unit/cgroup.procs) 2>/dev/null; rmdir /sys/fs/cgroup/$h/$unit 2>/dev/null && break; sleep 0.1; done")
    nb_enter+="echo \$\$ > /sys/fs/cgroup/$h/$unit/cgroup.procs; "
  done
  # For the matrix: which cgroup the ground truth's (v2) id of the neighbor is
  if [[ -n ${IODIAG_LAB_GT:-} ]]; then
    echo "$(stat -c %i "/sys/fs/cgroup/unified/$unit") /$unit" > "$IODIAG_LAB_GT.cgroups"
  fi
}
neighbor() { ((fault)) && bg sh -c "$nb_enter exec \"\$@\"" neighbor "$@"; return 0; }

# IODIAG_LAB_RUN: a command to run while the fault happens instead of the
# recording (the fleet and watch tests drive iodiag themselves); OUT is unused then.
record() {
  sleep 1
  if [[ -n ${IODIAG_LAB_RUN:-} ]]; then bash -c "$IODIAG_LAB_RUN"; return; fi
  local gt_pid="" procs_pid=""
  if [[ -n ${IODIAG_LAB_GT:-} ]]; then
    victim_dir
    local id; id=$(stat -c %i "$victim_cg")
    # The same window as the recording: iodiag starts right after the probes
    # attach and takes about a second to attach its own.
    bpftrace -f json "$here/tests/lab/ground_truth.bt" "$id" $((secs + 1)) > "$work/gt.json" 2>"$work/gt.err" & gt_pid=$!
    undo+=("kill -KILL $gt_pid")
    # bpftrace ignores SIGINT until its probes are attached: wait for that
    # (a loaded machine compiles slowly), and give up rather than record
    # without ground truth.
    for _ in $(seq 600); do grep -q attached_probes "$work/gt.json" 2>/dev/null && break; sleep 0.1; done
    grep -q attached_probes "$work/gt.json" || { echo "ground truth: bpftrace did not attach" >&2; exit 1; }
    # Who ran: command lines for the matrix's victims and culprit (tests/lab/procs.py)
    setsid python3 "$here/tests/lab/procs.py" "$work/procs.json" >/dev/null 2>&1 & procs_pid=$!
    undo+=("kill -KILL $procs_pid")
  fi
  # A scenario that knows its device's real class says so the way an operator
  # does: a site configuration (written to $site_config), kept in the bundle.
  local config=()
  [[ -n ${site_config:-} ]] && config=(--config "$site_config")
  if [[ $(p BASELINE 0) == 1 ]]; then
    sleep $((secs + 1))   # the ground truth alone, over the same window
  else
    "$iodiag" record --duration "$secs" "${config[@]}" -o "$out" >/dev/null
  fi
  if [[ -n $gt_pid ]]; then
    for _ in $(seq 300); do kill -0 "$gt_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$gt_pid" 2>/dev/null || true
    wait "$gt_pid" || true
    grep -q '"@sys_ops"' "$work/gt.json" || echo "ground truth: bpftrace printed no totals" >&2
    cp "$work/gt.json" "$IODIAG_LAB_GT"
    kill -KILL "$procs_pid" 2>/dev/null || true
    cp "$work/procs.json" "$IODIAG_LAB_GT.procs" 2>/dev/null || true
  fi
}

# free_port: a TCP port nobody listens on (for the lab's servers).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# app_victim APP DIR: a real application committing durably into DIR (a mounted
# filesystem), as the victim, with the client that loads it:
#   sqlite    tests/lab/sqlite_load.py: CLIENTS (2) threads, a database each, ROWS (4)
#             rows a commit, JOURNAL (wal) mode, synchronous=FULL
#   postgres  PostgreSQL, pgbench -N with CLIENTS (4) clients (simple updates, a commit each)
#   redis     redis-server, AOF with appendfsync always (a write and an fdatasync per
#             command), redis-benchmark SET with CLIENTS (8) clients
#   fio       fio: CLIENTS (4) writers of 4 KiB, each write fsynced
app_victim() {
  local app=$1 dir=$2 clients
  case $app in
    sqlite)
      victim -- python3 "$here/tests/lab/sqlite_load.py" "$dir" "$(p CLIENTS 2)" "$(p ROWS 4)" "$(p JOURNAL wal)" ;;
    postgres)
      local pgbin pgdata port; pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
      pgdata=$dir/pgdata; mkdir "$pgdata"; chown postgres "$pgdata" "$dir"; chmod 755 "$work"
      port=$(free_port)
      runuser -u postgres -- "$pgbin/initdb" -D "$pgdata" -A trust >/dev/null
      victim_dir
      undo+=("runuser -u postgres -- $pgbin/pg_ctl -D $pgdata -m immediate stop")
      sh -c "echo \$\$ > $victim_cg/cgroup.procs; exec runuser -u postgres -- $pgbin/pg_ctl -D $pgdata -w -l $pgdata/server.log \
         -o '-p $port -k $dir -c listen_addresses=' start" >/dev/null
      runuser -u postgres -- "$pgbin/pgbench" -h "$dir" -p "$port" -i -s 4 -q postgres >/dev/null 2>&1
      clients=$(p CLIENTS 4)
      bg runuser -u postgres -- "$pgbin/pgbench" -h "$dir" -p "$port" -c "$clients" -j "$(( clients < 2 ? 1 : 2 ))" \
         -T 120 -N postgres ;;
    redis)
      command -v redis-server >/dev/null || { echo "skipped: redis-server not found" >&2; exit 77; }
      local port; port=$(free_port)
      victim -- redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --appendonly yes --appendfsync always \
         --save "" --daemonize no --logfile "$dir/redis.log"
      for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
      bg redis-benchmark -p "$port" -t set -n 100000000 -c "$(p CLIENTS 8)" -d 128 -r 100000 -q ;;
    fio)
      victim -- fio --name=small --directory="$dir" --rw=randwrite --bs=4k --size=8m --ioengine=psync \
         --fsync=1 --numjobs="$(p CLIENTS 4)" --time_based --runtime=120 ;;
    *) echo "IODIAG_LAB_APP=$app: fio, sqlite, postgres or redis" >&2; exit 2 ;;
  esac
}

case $name in
  idle)
    record ;;
  dirty_midwindow)    # a buffered writer on ext4; vm.dirty_bytes cut to 2 MiB halfway through the
                      # window and a second, full-speed writer from then on (a fault that starts
                      # mid-recording, for the per-interval series);
                      # prints "fault_unix T", when the limit was cut
    loop_on /tmp 1024; fs_on "$dev" "$work/mnt"
    # Before the cut: writeback from 16 MiB dirty and a writer slower than the
    # disk, so little is dirty when the limit drops. Under the default limits
    # (a fifth of memory) hundreds of MiB pile up first, and the first write()
    # after the cut waits for all of it: past the window's end, where a call
    # that never returned is in no interval. With the cut a second writer
    # starts at full speed (faster than the disk), so the 2 MiB limit bites.
    set_dirty_bytes dirty_background $((16*1024*1024))
    bg fio --name=w --directory="$work/mnt" --rw=write --bs=64k --size=512m --ioengine=psync --rate=16m \
       --time_based --runtime=120
    sleep 1
    "$iodiag" -v record --duration "$secs" -o "$out" >/dev/null 2>"$work/record.log" & rec=$!
    undo+=("kill $rec")
    for ((i = 0; i < 600; i++)); do   # BPF load and attach come before the window
      grep -q "window starts" "$work/record.log" && break
      kill -0 $rec 2>/dev/null || break
      sleep 0.1
    done
    grep -q "window starts" "$work/record.log" || { cat "$work/record.log" >&2; echo "the recording did not start" >&2; exit 1; }
    sleep "$(awk -v s="$secs" 'BEGIN { print s / 2 }')"
    tiny_dirty_limits
    echo "fault_unix $(date +%s.%N)"
    bg fio --name=w2 --directory="$work/mnt" --rw=write --bs=64k --size=256m --ioengine=psync \
       --time_based --runtime=120
    wait $rec || { cat "$work/record.log" >&2; exit 1; } ;;
  cached_reads)       # a read loop over a file that fits in the page cache: healthy
    loop_on /tmp 512; fs_on "$dev" "$work/mnt"   # 512: mkfs.xfs refuses under 300 MB
    dd if=/dev/urandom of="$work/mnt/hot" bs=1M count=32 status=none; cat "$work/mnt/hot" >/dev/null
    bg fio --name=r --filename="$work/mnt/hot" --rw=randread --bs=4k --ioengine=psync --invalidate=0 \
       --time_based --runtime=120
    record ;;
  device_saturated)   # random direct writes at depth 32 on a loop device over the virtual disk
    loop_on /tmp 1024
    bg fio --name=w --filename="$dev" --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
       --iodepth=32 --time_based --runtime=120
    record ;;
  slow_device)        # a loop device whose backing I/O is throttled: its reader is in a v1
                      # blkio group limited on the backing disk, and the loop worker issues
                      # the backing I/O on the reader's behalf (per-cgroup loop workers)
    loop_on /tmp 256; back=$(df --output=source /tmp | tail -1)
    dd if=/dev/zero of="$dev" bs=1M count=256 oflag=direct status=none   # real blocks: holes read as zeros without I/O
    majmin=$(lsblk -ndo MAJ:MIN "$back" | tr -d ' ')
    losetup --direct-io=on "$dev" 2>/dev/null || true   # backing reads reach the disk, not the page cache
    cg=/sys/fs/cgroup/blkio/iodiag-lab-$$; mkdir "$cg"; undo+=("rmdir $cg")
    echo "$majmin 200" > "$cg/blkio.throttle.read_iops_device"
    victim "$cg/cgroup.procs" -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 --time_based --runtime=120
    record ;;
  dirty_throttle)     # JOBS (1) buffered writers of BS (64k) under a tiny vm.dirty_bytes
                      # (DIRTY_MB, 2; background half of it); RATE_KB (0: unpaced) KiB/s each
                      # (the control dirty_limit_paced: a writer that never reaches the limit)
    loop_on /tmp 1024; fs_on "$dev" "$work/mnt"
    if ((fault)); then
      mb=$(p DIRTY_MB 2)
      set_dirty_bytes dirty $((mb*1024*1024)); set_dirty_bytes dirty_background $((mb*1024*1024/2))
    fi
    rate=$(p RATE_KB 0); pace=(); ((rate)) && pace=(--rate="${rate}k")
    victim -- fio --name=w --directory="$work/mnt" --rw=write --bs="$(p BS 64k)" --size=256m --ioengine=psync \
       --numjobs="$(p JOBS 1)" "${pace[@]}" --time_based --runtime=120
    record ;;
  fsync_storm)        # small write+fsync threads beside a big buffered writer: journal/log
    # btrfs copies on write: rewriting the big file needs free space until each
    # transaction commits, and 1 GB runs out (writers wait in __reserve_bytes)
    size=1024; [[ $fs == btrfs ]] && size=4096
    loop_on /tmp $size; fs_on "$dev" "$work/mnt"
    # the big writer: WRITER_BS (1m); the victims: JOBS (4) of BS (4k) writes, each fsynced
    ((fault)) && bg fio --name=big --directory="$work/mnt" --rw=write --bs="$(p WRITER_BS 1m)" --size=512m \
       --ioengine=psync --time_based --runtime=120
    victim -- fio --name=small --directory="$work/mnt" --rw=randwrite --bs="$(p BS 4k)" --size=8m --ioengine=psync \
       --fsync=1 --numjobs="$(p JOBS 4)" --time_based --runtime=120
    record ;;
  tiny_nr_requests)   # many threads at depth 1 against nr_requests=4 (tag waits in Q2G)
    loop_on /dev/shm 512; q=/sys/block/$(basename "$dev")/queue
    # A loop device keeps its queue settings across detach: the next user gets the defaults.
    undo+=("echo none > $q/scheduler; cat $q/../mq/0/nr_tags > $q/nr_requests")
    echo mq-deadline > $q/scheduler 2>/dev/null || true
    echo 4 > $q/nr_requests
    bg fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
       --numjobs=32 --time_based --runtime=120
    record ;;
  blkio_throttle)     # a direct reader in a v1 blkio group limited far below its demand
    loop_on /dev/shm 256; majmin=$(lsblk -ndo MAJ:MIN "$dev" | tr -d ' ')
    cg=/sys/fs/cgroup/blkio/iodiag-lab-$$; mkdir "$cg"; undo+=("rmdir $cg")
    # LIMIT_IOPS (100) read IOPS; JOBS readers (2)
    ((fault)) && echo "$majmin $(p LIMIT_IOPS 100)" > "$cg/blkio.throttle.read_iops_device"
    victim "$cg/cgroup.procs" -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
       --numjobs="$(p JOBS 2)" --time_based --runtime=120
    record ;;
  memcg_reader)       # a buffered reader in a v1 memory cgroup much smaller than its file
    loop_on /tmp 1024; fs_on "$dev" "$work/mnt"
    dd if=/dev/urandom of="$work/mnt/data" bs=1M count=400 status=none; sync
    echo 3 > /proc/sys/vm/drop_caches
    cg=/sys/fs/cgroup/memory/iodiag-lab-$$; mkdir "$cg"; undo+=("rmdir $cg")
    echo $((64*1024*1024)) > "$cg/memory.limit_in_bytes"
    victim "$cg/cgroup.procs" -- fio --name=r --filename="$work/mnt/data" --rw=randread --bs=4k --ioengine=psync --time_based --runtime=120
    record ;;
  busy_healthy)       # high IOPS on a fast device and a buffered writer under normal dirty limits: healthy
    loop_on /dev/shm 512
    bg fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=32 \
       --time_based --runtime=120
    dev_r=$dev; loop_on /dev/shm 512; fs_on "$dev" "$work/mnt"
    victim -- fio --name=w --directory="$work/mnt" --rw=write --bs=1m --size=64m --ioengine=psync \
       --rate=64m --time_based --runtime=120
    record ;;
  qd1_fast)           # one thread of synchronous direct 4 KiB reads on a fast device (depth 1)
    loop_on /dev/shm 512
    victim -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
       --time_based --runtime=120
    record ;;
  classless_slow)     # a loop device over slow storage the kernel cannot see into (FUSE, DELAY_MS
                      # a request, default 4); JOBS readers (4) of BS (4k)
    delay=$(p DELAY_MS 4); ((fault)) || delay=0
    slow_loop_on fixed:$delay 256
    victim -- fio --name=r --filename="$dev" --rw=randread --bs="$(p BS 4k)" --direct=1 --ioengine=psync \
       --numjobs="$(p JOBS 4)" --time_based --runtime=120
    record ;;
  stacked_slow|stacked_slow_busy_disk)
                      # loop1 over a file on ext4 on loop0, loop0 over slow storage (FUSE, 3 ms);
                      # _busy_disk: two other programs (dd) read the machine's disk meanwhile,
                      # which then holds more block time than the victim's stack
                      # DELAY_MS (3) a request below; JOBS readers (2) of BS (4k)
    delay=$(p DELAY_MS 3); ((fault)) || delay=0
    slow_loop_on fixed:$delay 512; lower=$dev; fs_on "$lower" "$work/mnt"
    loop_on "$work/mnt" 256
    dd if=/dev/zero of="$dev" bs=1M count=64 oflag=direct status=none
    losetup --direct-io=on "$dev" 2>/dev/null || true
    if [[ $name == stacked_slow_busy_disk ]]; then
      busy=$(mktemp /tmp/iodiag-lab-XXXXXX.dat); undo+=("rm -f $busy")
      dd if=/dev/zero of="$busy" bs=1M count=256 oflag=direct status=none
      for _ in 1 2; do
        bg sh -c "while :; do dd if=$busy of=/dev/null bs=1M iflag=direct status=none; done"
      done
    fi
    victim -- fio --name=r --filename="$dev" --rw=randread --bs="$(p BS 4k)" --direct=1 --ioengine=psync \
       --size=64m --numjobs="$(p JOBS 2)" --time_based --runtime=120
    record ;;
  loop_cgroup_limit)  # synchronous readers of a loop device whose backing reads on the disk are
                      # capped by their v1 blkio group (the loop worker issues them on their behalf)
    loop_on /tmp 256; back=$(df --output=source /tmp | tail -1)
    dd if=/dev/zero of="$dev" bs=1M count=256 oflag=direct status=none
    majmin=$(lsblk -ndo MAJ:MIN "$back" | tr -d ' ')
    losetup --direct-io=on "$dev" 2>/dev/null || true
    cg=/sys/fs/cgroup/blkio/iodiag-lab-$$; mkdir "$cg"; undo+=("rmdir $cg")
    # LIMIT_IOPS (150) read IOPS; JOBS readers (2)
    ((fault)) && echo "$majmin $(p LIMIT_IOPS 150)" > "$cg/blkio.throttle.read_iops_device"
    victim "$cg/cgroup.procs" -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 \
       --ioengine=psync --numjobs="$(p JOBS 2)" --time_based --runtime=120
    record ;;
  cpu_starved)        # direct reads of a loop device over memory among CPU hogs of a higher
                      # priority (nice -10) pinned to the reader's CPU: each read sleeps for its
                      # I/O, then waits for that CPU (run-queue delay, not storage). The loop
                      # worker (an unbound kworker) is kept off that CPU, or it would starve too
                      # and the device would be slow; the machine's disk (shared with other
                      # programs, which can saturate it and make storage the real cause) is not
                      # in the reader's path. (A device served in the reader's own context, such
                      # as zram, does not do: a syscall is not preempted in a kernel without
                      # full preemption, so no run-queue delay falls inside it.)
    loop_on /dev/shm 256
    cpu=$(( $(nproc) - 1 ))
    wq=/sys/devices/virtual/workqueue/cpumask
    if (( cpu > 0 )) && [[ -w $wq && $(cat $wq) != *,* ]]; then
      old_mask=$(cat $wq); new_mask=$(printf %x $(( 0x$old_mask & ~(1 << cpu) )))
      if [[ $new_mask != 0 ]]; then undo+=("echo $old_mask > $wq"); echo "$new_mask" > $wq; fi
    fi
    # Four reader threads: on a shared machine another program's slow I/O (a
    # linker reading a saturated disk) can outweigh two of them, and iodiag
    # speaks for the application that suffered most.
    # HOGS (4) CPU hogs at nice NICE (-10), pinned to the reader's CPU; JOBS (4) readers
    ((fault)) && bg taskset -c $cpu nice -n "$(p NICE -10)" stress-ng --cpu "$(p HOGS 4)" --timeout 120
    victim -- taskset -c $cpu fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
       --numjobs="$(p JOBS 4)" --time_based --runtime=120
    record ;;
  lock_contention)    # JOBS (6) writers of BS (256k) into one file: they serialise on its inode
                      # lock (i_rwsem); unfaulted, each writes a file of its own
    loop_on /dev/shm 1024; fs_on "$dev" "$work/mnt"
    target=(--filename="$work/mnt/shared"); ((fault)) || target=(--directory="$work/mnt")
    victim -- fio --name=w "${target[@]}" --rw=write --bs="$(p BS 256k)" --size=128m \
       --ioengine=psync --numjobs="$(p JOBS 6)" --time_based --runtime=120
    record ;;
  two_causes|two_apps) # a writer under a tiny vm.dirty_bytes and a reader capped by its blkio group;
                      # _apps: two applications (the writer runs as "ingest": fio under another
                      # name), each slowed by its own cause
    loop_on /tmp 1024; fs_on "$dev" "$work/mnt"
    tiny_dirty_limits
    writer=fio
    if [[ $name == two_apps ]]; then writer=$work/ingest; ln -s "$(command -v fio)" "$writer"; fi
    victim -- "$writer" --name=w --directory="$work/mnt" --rw=write --bs=64k --size=512m --ioengine=psync \
       --time_based --runtime=120
    loop_on /dev/shm 256; majmin=$(lsblk -ndo MAJ:MIN "$dev" | tr -d ' ')
    cg=/sys/fs/cgroup/blkio/iodiag-lab-$$; mkdir "$cg"; undo+=("rmdir $cg")
    echo "$majmin 50" > "$cg/blkio.throttle.read_iops_device"
    victim "$cg/cgroup.procs" -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 \
       --ioengine=psync --numjobs=2 --time_based --runtime=120
    record ;;
  two_apps_device)    # two applications, two causes, the device's second: "ingest" (fio under
                      # another name, four writers) under a tiny vm.dirty_bytes holds the most
                      # slow time; a direct reader of a loop device over slow storage (FUSE,
                      # 4 ms a request) waits on the device, which the first application's
                      # I/O never touches
    loop_on /tmp 1024; fs_on "$dev" "$work/mnt"
    tiny_dirty_limits
    writer=$work/ingest; ln -s "$(command -v fio)" "$writer"
    victim -- "$writer" --name=w --directory="$work/mnt" --rw=write --bs=64k --size=128m --ioengine=psync \
       --numjobs=4 --time_based --runtime=120
    slow_loop_on fixed:4 256
    victim -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
       --time_based --runtime=120
    record ;;
  bfq_idling)         # bfq on a loop device over memory, shared by two synchronous random readers
                      # of unequal I/O priority (best-effort 0 and 7): to give the first its
                      # larger share, bfq may idle the device for it after its requests,
                      # while the second's requests wait in the scheduler (I2D); a device
                      # served from memory gains nothing from the idling. Both readers are
                      # victims (the device's only users).
    loop_on /dev/shm 512; q=/sys/block/$(basename "$dev")/queue
    # Before the loop device's detach (a loop device keeps its scheduler across it).
    grep -qw bfq "$q/scheduler" || { echo "skipped: this kernel has no bfq (CONFIG_IOSCHED_BFQ)" >&2; exit 77; }
    undo+=("echo none > $q/scheduler"); ((fault)) && echo bfq > $q/scheduler
    # No weight raising (bfq's boost for queues it takes for interactive newcomers;
    # the usual server setting), so the two weights stay unequal. bfq still
    # decides for itself whether idling pays: here it idled in about a third of
    # the runs (4 of 15 trial runs, with or without this setting), and the
    # accuracy matrix takes the cause from the ground truth. The setting goes
    # with bfq when the scheduler is put back.
    ((fault)) && echo 0 > $q/iosched/low_latency
    # One fio, two jobs: processes started together, so neither is weight-raised
    # by bfq as a newcomer while the other is not.
    victim -- fio --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync --time_based --runtime=120 \
       --name=hi --prioclass=2 --prio=0 --name=lo --prioclass=2 --prio=7
    record ;;
  hdd_seek|hdd_seek_known)  # random reads 8 deep on a device that serves one request at a time and
                      # seeks (FUSE model of a 7200 rpm disk, tests/lab/slowfs.py), mq-deadline;
                      # _known: the site configuration gives the device its real class (hdd)
    model=hdd; ((fault)) || model=fixed:0
    slow_loop_on $model 1024; echo mq-deadline > /sys/block/$(basename "$dev")/queue/scheduler
    if [[ $name == hdd_seek_known ]]; then
      site_config=$work/iodiag.yaml
      printf 'devices:\n  %s: {class: hdd}\n' "$(basename "$dev")" > "$site_config"
    fi
    victim -- fio --name=r --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
       --numjobs="$(p JOBS 8)" --time_based --runtime=120
    record ;;
  stall_tail|stacked_tail)
                      # a device that stalls now and then: FUSE storage under a loop device
                      # serves requests in a fraction of a millisecond, but each starts a stall
                      # of the whole device with probability STALL_PCT % (1) lasting STALL_MS
                      # (100); JOBS (2) readers of BS (4k), direct (DIRECT=1) or through the page
                      # cache of a file on $fs (DIRECT=0). _stacked: the reader's device is a
                      # loop device over a file on $fs on the stalling one (the stalls come
                      # from under the stack)
    model=stall:$(p STALL_PCT 1):$(p STALL_MS 100); ((fault)) || model=stall:0:0
    slow_loop_on "$model" 512
    direct=$(p DIRECT 1)
    if [[ $name == stacked_tail ]]; then
      fs_on "$dev" "$work/low"; loop_on "$work/low" 256
      dd if=/dev/zero of="$dev" bs=1M count=128 oflag=direct status=none
      losetup --direct-io=on "$dev" 2>/dev/null || true
    fi
    target=(--filename="$dev" --size=128m)
    if [[ $direct == 0 ]]; then
      fs_on "$dev" "$work/mnt"
      dd if=/dev/urandom of="$work/mnt/data" bs=1M count=200 status=none; sync
      echo 3 > /proc/sys/vm/drop_caches
      target=(--filename="$work/mnt/data")
    fi
    victim -- fio --name=r "${target[@]}" --rw=randread --bs="$(p BS 4k)" --direct="$direct" --ioengine=psync \
       --invalidate=0 --numjobs="$(p JOBS 2)" --time_based --runtime=120
    record ;;
  db_commits|pgbench_writer)
                      # a real application's durable commits (IODIAG_LAB_APP: sqlite, postgres,
                      # redis, fio; default sqlite, postgres for pgbench_writer) beside a bulk
                      # writer on the same filesystem ($fs): WRITERS (1) buffered writers of
                      # WRITER_BS (1m)
    size=2048; [[ $fs == btrfs ]] && size=4096
    loop_on /tmp $size; fs_on "$dev" "$work/mnt"
    mkdir "$work/mnt/app"
    app=sqlite; [[ $name == pgbench_writer ]] && app=postgres
    app_victim "$(p APP $app)" "$work/mnt/app"
    sleep 1
    ((fault)) && bg fio --name=bulk --directory="$work/mnt" --rw=write --bs="$(p WRITER_BS 1m)" --size=512m \
       --ioengine=psync --numjobs="$(p WRITERS 1)" --time_based --runtime=120
    record ;;
  nr_requests_low|nr_requests_enough)
                      # issue 34, a setting as the cause: random direct reads of a loop device
                      # (over BACKING: /tmp, the machine's disk, direct I/O; /dev/shm, memory)
                      # under scheduler SCHED, with nr_requests NR (fault) or the kernel's
                      # default (IODIAG_LAB_FAULT=0: the same workload, the baseline). The
                      # reader: JOBS synchronous threads (psync), BS-byte requests.
                      # nr_requests_enough (the control): NR lowered but above what the
                      # readers keep in flight. The kernel takes no fewer than 4 (BLKDEV_MIN_RQ).
    scheduled_loop_on 512 none   # the scheduler sets its own default nr_requests
    ((fault)) && echo "$(p NR 4)" > $q/nr_requests
    victim -- fio --name=r --filename="$dev" --rw=randread --bs="$(p BS 4k)" --direct=1 --ioengine=psync \
       --numjobs="$(p JOBS 32)" --time_based --runtime=120
    record ;;
  max_sectors_low|max_sectors_random)
                      # issue 34, a setting as the cause: JOBS synchronous direct sequential
                      # readers or writers (RW read|write, BS-byte requests; fio) of a loop
                      # device over BACKING (/tmp: the disk, direct I/O; /dev/shm: memory)
                      # with max_sectors_kb MAX_KB (fault) or the kernel's limit
                      # (IODIAG_LAB_FAULT=0: the same workload, the baseline).
                      # max_sectors_random (the control): BS-byte random readers under
                      # the same limit, their requests never larger than it.
    scheduled_loop_on 1024 none
    dd if=/dev/urandom of="$dev" bs=1M count=512 oflag=direct status=none
    ((fault)) && echo "$(p MAX_KB 8)" > $q/max_sectors_kb
    rw=$(p RW read); [[ $name == max_sectors_random ]] && rw=randread
    victim -- fio --name=s --filename="$dev" --size=512m --rw="$rw" --bs="$(p BS 1m)" --direct=1 --ioengine=psync \
       --numjobs="$(p JOBS 1)" --time_based --runtime=120
    record ;;
  ioprio_idle|ioprio_idle_alone)
                      # issue 34, a setting as the cause: a latency-sensitive reader (JOBS
                      # synchronous BS-byte random direct reads, fio) of a loop device over
                      # BACKING under SCHED (mq-deadline: the scheduler this kernel has that
                      # honours I/O priority classes), run with ionice -c3 (fault) or in the
                      # default class (IODIAG_LAB_FAULT=0: the same workload, the baseline),
                      # beside a bulk reader of the same device (fio, best-effort,
                      # NEIGHBOR_DEPTH deep, NEIGHBOR_BS requests). ioprio_idle_alone (the
                      # control): the idle-class reader alone, waiting for nobody.
    scheduled_loop_on 1024 mq-deadline
    dd if=/dev/urandom of="$dev" bs=1M count=256 oflag=direct status=none
    if [[ $name == ioprio_idle ]]; then
      bg fio --name=backup --filename="$dev" --rw=read --bs="$(p NEIGHBOR_BS 128k)" --direct=1 --ioengine=libaio \
         --iodepth="$(p NEIGHBOR_DEPTH 16)" --time_based --runtime=120
    fi
    class=(); ((fault)) && class=(ionice -c3)
    victim -- "${class[@]}" fio --name=lookup --filename="$dev" --rw=randread --bs="$(p BS 4k)" --size=256m \
       --direct=1 --ioengine=psync --numjobs="$(p JOBS 1)" --time_based --runtime=120
    record ;;
  sync_mount|sync_mount_own|dirsync_mount|dirsync_own|data_journal|data_journal_light)
                      # issue 34, a setting as the cause: a writer on $fs on a loop device
                      # over the machine's disk (direct I/O), mounted sync (dirsync_*:
                      # dirsync; data_journal*: data=journal, ext4 only) (fault) or with the
                      # defaults (IODIAG_LAB_FAULT=0: the same workload, the baseline).
                      # data_journal: WRITER bulk or fio as below; its control
                      # (data_journal_light): reader, or fio_rate (fio's random BS KiB
                      # writes at RATE KiB/s).
                      # WRITER spool / spool_fsync (dirsync_mount): tests/lab/spool.py's
                      # creates of new BS KiB files at RATE a second at most, without or
                      # with an fsync of each. The controls (dirsync_own) create nothing
                      # after they start: bulk, fio_fsync, reader as below.
                      # WRITER (sync_mount): bulk = tests/lab/bulk_io.py's buffered writes of
                      # BS KiB, MB per pass; bulk_fsync = the same with an fsync per pass;
                      # fio = fio's random BS KiB writes (psync) to a 64 MiB file; sqlite =
                      # the lab's SQLite application, ROWS rows per commit. The controls
                      # (sync_mount_own), where the writer asks for durability itself or does
                      # not write: dsync = dd with oflag=dsync; fio_fsync = fio with an
                      # fsync after each write; reader = fio's random reads of a 64 MiB file.
    loop_on /tmp 1024
    losetup --direct-io=on "$dev" 2>/dev/null || true   # the device's writes reach the disk
    mkfs_on "$dev"; mkdir "$work/mnt"
    opts=defaults; ((fault)) && opts=${name%%_*}   # sync or dirsync
    [[ $opts == data ]] && opts=data=journal
    mount -o "$opts" "$dev" "$work/mnt"; undo+=("umount $work/mnt || umount -l $work/mnt")
    mkdir "$work/mnt/app"; app_dir=$work/mnt/app
    bs=$(p BS 4)
    # fio's file made before the window (not laid out under the fault's clock)
    fio_file() { fio --name=prep --filename="$app_dir/data" --rw=write --bs=1m --size=64m --ioengine=psync \
                   --end_fsync=1 >/dev/null; }
    case $(p WRITER bulk) in
      bulk)       victim -- python3 "$here/tests/lab/bulk_io.py" write "$app_dir/out" "$bs" buffered "$(p MB 64)" ;;
      bulk_fsync) victim -- python3 "$here/tests/lab/bulk_io.py" write "$app_dir/out" "$bs" fsync "$(p MB 64)" ;;
      fio)        fio_file
                  victim -- fio --name=writer --filename="$app_dir/data" --rw=randwrite --bs="${bs}k" --size=64m \
                     --ioengine=psync --time_based --runtime=120 ;;
      sqlite)     app_victim sqlite "$app_dir" ;;
      spool)      victim -- python3 "$here/tests/lab/spool.py" "$app_dir/spool" "$bs" plain "$(p RATE 500)" ;;
      spool_fsync) victim -- python3 "$here/tests/lab/spool.py" "$app_dir/spool" "$bs" fsync "$(p RATE 500)" ;;
      dsync)      victim -- sh -c "while :; do dd if=/dev/zero of=$app_dir/out bs=${bs}k count=4096 oflag=dsync \
                     status=none; done" ;;
      fio_fsync)  fio_file
                  victim -- fio --name=writer --filename="$app_dir/data" --rw=randwrite --bs="${bs}k" --size=64m \
                     --ioengine=psync --fsync=1 --time_based --runtime=120 ;;
      fio_rate)   fio_file
                  victim -- fio --name=writer --filename="$app_dir/data" --rw=randwrite --bs="${bs}k" --size=64m \
                     --ioengine=psync --rate="$(p RATE 512)k" --time_based --runtime=120 ;;
      reader)     fio_file
                  victim -- fio --name=reader --filename="$app_dir/data" --rw=randread --bs="${bs}k" --size=64m \
                     --ioengine=psync --direct=1 --time_based --runtime=120 ;;
      *) echo "IODIAG_LAB_WRITER=$(p WRITER bulk): bulk, bulk_fsync, fio, sqlite, spool, spool_fsync, dsync, fio_fsync, fio_rate or reader" >&2; exit 2 ;;
    esac
    record ;;
  discard_slow|discard_light)
                      # issue 34, a setting as the cause: a writer that frees blocks as it
                      # goes, on $fs mounted discard (fault) or nodiscard (IODIAG_LAB_FAULT=0,
                      # the same workload with the default) on a loop device over storage
                      # whose discards (holes punched in its backing file) take DISCARD_MS
                      # each, one at a time (tests/lab/slowfs.py discard:MS: a thin volume or
                      # an SSD with a slow TRIM); its reads and writes pass through.
                      # WRITER rotate: tests/lab/spool.py's BS-KiB files at RATE a second at
                      # most, each fsynced, the one written 100 before removed; sqlite: the
                      # lab's SQLite application in the rollback-journal mode (its journal
                      # deleted at each commit), CLIENTS writers. The control (discard_light)
                      # trims fast: a loop device over a file in memory (/dev/shm), whose
                      # holes take microseconds (the FUSE storage's own round trip, a
                      # fraction of a millisecond per request, would not be fast).
    if [[ $name == discard_light ]]; then loop_on /dev/shm 1024; else slow_loop_on "discard:$(p DISCARD_MS 10)" 1024; fi
    # mkfs would discard the whole device first: not part of the window, and slow here
    case $fs in
      ext4)  mkfs.ext4 -q -F -E nodiscard "$dev" ;;
      xfs)   mkfs.xfs -q -f -K "$dev" ;;
      btrfs) mkfs.btrfs -q -f -K "$dev" ;;
    esac
    mkdir "$work/mnt"
    # nodiscard stated: btrfs discards asynchronously by default on a non-rotational device
    opts=nodiscard; ((fault)) && opts=discard
    mount -o "$opts" "$dev" "$work/mnt"; undo+=("umount $work/mnt || umount -l $work/mnt")
    mkdir "$work/mnt/app"
    case $(p WRITER rotate) in
      rotate) victim -- python3 "$here/tests/lab/spool.py" "$work/mnt/app/spool" "$(p BS 16)" rotate "$(p RATE 200)" ;;
      sqlite) IODIAG_LAB_JOURNAL=delete app_victim sqlite "$work/mnt/app" ;;
      *) echo "IODIAG_LAB_WRITER=$(p WRITER rotate): rotate or sqlite" >&2; exit 2 ;;
    esac
    record ;;
  readahead_off|readahead_random)
                      # issue 34, a setting as the cause: a reader (tests/lab/seq_reader.py,
                      # BS-byte reads; readahead_random: at random offsets, the control) of a
                      # FILE_MB file on $fs on a loop device over the machine's disk (direct
                      # I/O), whose read_ahead_kb is RA_KB (fault) or the kernel's default,
                      # 128 (IODIAG_LAB_FAULT=0, the same workload with the default setting).
                      # The reader opens its file after the setting is made, as a file's
                      # window is taken when it is opened.
    loop_on /tmp $(( $(p FILE_MB 256) + 128 ))
    losetup --direct-io=on "$dev" 2>/dev/null || true   # the device's reads reach the disk
    ra=/sys/block/$(basename "$dev")/queue/read_ahead_kb
    # A loop device keeps its queue settings across detach: the next user gets the default.
    undo+=("echo 128 > $ra")
    fs_on "$dev" "$work/mnt"
    dd if=/dev/urandom of="$work/mnt/data" bs=1M count="$(p FILE_MB 256)" status=none; sync
    if ((fault)); then echo "$(p RA_KB 0)" > "$ra"; else echo 128 > "$ra"; fi
    order=(); [[ $name == readahead_random ]] && order=(--random)
    victim -- python3 "$here/tests/lab/seq_reader.py" "$work/mnt/data" "$(p BS 4096)" "${order[@]}"
    record ;;
  app_alone)          # control: the application (IODIAG_LAB_APP, default sqlite) alone on a
                      # filesystem ($fs) on a loop device over the machine's disk: healthy
    loop_on /tmp 2048; fs_on "$dev" "$work/mnt"
    mkdir "$work/mnt/app"
    app_victim "$(p APP sqlite)" "$work/mnt/app"
    record ;;
  # ---- contention (issue 23): a victim and a neighbor in different cgroups ----
  # The victim is fio in the victim cgroup; the neighbor runs as "backup" (fio
  # under another name, so the two are two applications) or stress-ng, in a
  # cgroup of its own shaped as a systemd unit, /iodiag-lab-PID.slice/backup.service
  # (v2, in the unified hierarchy, and v1 memory; with BLKIO=1 also the v1 blkio group of that
  # path, where the kernel charges its bios), so iodiag can name it as people
  # do. IODIAG_LAB_FAULT=0: the victim alone (no neighbor). Parameters:
  #   BACKING         directory of the loop device's backing file [/tmp: the machine's disk, direct I/O]
  #   NEIGHBOR_BS     the neighbor's request size [128k; neighbor_buffered: 1m]
  #   NEIGHBOR_DEPTH  its queue depth (libaio) [32]
  #   NEIGHBOR_JOBS   its jobs (writers for neighbor_buffered) [1; 2]
  #   BLKIO           1: the neighbor also in the v1 blkio group [0]
  #   HOGS, NICE      neighbor_cpu: CPU hogs (stress-ng) and their nice value [4, -10]
  #   JOBS, BS        the victim's reader threads [1; neighbor_cpu: 4] and request size [4k]
  #   DEPTH           neighbor_control: the victim's own queue depth (libaio) [32]
  #   VICTIM_IO       neighbor_cpu's victim: disk (direct reads of a file on the machine's disk,
  #                   completed in its interrupt) or loop (direct reads of a loop device over
  #                   memory, as cpu_starved: its worker kept off the CPU) [disk]
  # What a draw should be diagnosed as is decided by its measured ground truth
  # (accuracy_matrix.py, ground_truth.py: the others' share of what the victims
  # waited for), not by its name.
  neighbor_direct|neighbor_buffered|neighbor_cpu|neighbor_control)
    backing=$(p BACKING /tmp)
    # A unit named for what runs in it: backup.service (fio as "backup"), batch.service (stress-ng)
    unit=backup.service; [[ $name == neighbor_cpu ]] && unit=batch.service
    if ((fault)) && [[ $name != neighbor_control ]]; then neighbor_unit "$unit"; fi
    backup=$work/backup; ln -s "$(command -v fio)" "$backup"
    disk_loop() {   # disk_loop SIZE_MB: $dev over a file with real blocks (holes read as zeros without I/O)
      loop_on "$backing" "$1"
      if [[ $backing != /dev/shm ]]; then
        dd if=/dev/zero of="$dev" bs=1M count="$1" oflag=direct status=none
        losetup --direct-io=on "$dev" 2>/dev/null || true
      fi
    }
    case $name in
      neighbor_direct)    # direct reads of the victim's device, NEIGHBOR_DEPTH deep
        disk_loop 512
        neighbor "$backup" --name=b --filename="$dev" --rw=randread --bs="$(p NEIGHBOR_BS 128k)" --direct=1 \
           --ioengine=libaio --iodepth="$(p NEIGHBOR_DEPTH 32)" --numjobs="$(p NEIGHBOR_JOBS 1)" --time_based --runtime=120
        victim -- fio --name=r --filename="$dev" --rw=randread --bs="$(p BS 4k)" --direct=1 --ioengine=psync \
           --numjobs="$(p JOBS 1)" --time_based --runtime=120 ;;
      neighbor_buffered)  # buffered writers on the victim's filesystem: the flusher writes their data
        loop_on "$backing" 1024
        [[ $backing != /dev/shm ]] && { losetup --direct-io=on "$dev" 2>/dev/null || true; }
        fs_on "$dev" "$work/mnt"
        dd if=/dev/urandom of="$work/mnt/data" bs=1M count=128 status=none; sync
        neighbor "$backup" --name=w --directory="$work/mnt" --rw=write --bs="$(p NEIGHBOR_BS 1m)" --size=256m \
           --ioengine=psync --numjobs="$(p NEIGHBOR_JOBS 2)" --time_based --runtime=120
        victim -- fio --name=r --filename="$work/mnt/data" --rw=randread --bs="$(p BS 4k)" --direct=1 \
           --ioengine=psync --numjobs="$(p JOBS 1)" --time_based --runtime=120 ;;
      neighbor_cpu)       # CPU hogs of a higher priority on the victim's CPU (see cpu_starved)
        cpu=$(( $(nproc) - 1 ))
        # Each background command is a session of its own, so an autogroup of
        # its own: the scheduler shares a CPU between autogroups first and the
        # hogs' nice value counts only within theirs. Off for the scenario
        # (the previous setting comes back on exit), so they are the hogs the
        # name says.
        ag=/proc/sys/kernel/sched_autogroup_enabled
        if [[ -w $ag ]]; then undo+=("echo $(cat $ag) > $ag"); echo 0 > $ag; fi
        neighbor taskset -c $cpu nice -n "$(p NICE -10)" stress-ng --cpu "$(p HOGS 4)" --timeout 120
        case $(p VICTIM_IO disk) in
          disk)             # direct reads of a file on the machine's disk: completed in its interrupt, no worker
            nb_file=$(mktemp /tmp/iodiag-lab-XXXXXX.dat); undo+=("rm -f $nb_file")
            dd if=/dev/zero of="$nb_file" bs=1M count=256 oflag=direct status=none
            target=$nb_file ;;
          *)                # direct reads of a loop device over memory (its worker kept off the CPU)
            loop_on /dev/shm 256; target=$dev
            wq=/sys/devices/virtual/workqueue/cpumask
            if (( cpu > 0 )) && [[ -w $wq && $(cat $wq) != *,* ]]; then
              old_mask=$(cat $wq); new_mask=$(printf %x $(( 0x$old_mask & ~(1 << cpu) )))
              if [[ $new_mask != 0 ]]; then undo+=("echo $old_mask > $wq"); echo "$new_mask" > $wq; fi
            fi ;;
        esac
        victim -- taskset -c $cpu fio --name=r --filename="$target" --rw=randread --bs="$(p BS 4k)" --direct=1 \
           --ioengine=psync --numjobs="$(p JOBS 4)" --time_based --runtime=120 ;;
      neighbor_control)   # the victim alone keeps a fast device busy: no neighbor
        disk_loop 512
        victim -- fio --name=r --filename="$dev" --rw=randread --bs="$(p BS 4k)" --direct=1 --ioengine=libaio \
           --iodepth="$(p DEPTH 32)" --numjobs="$(p JOBS 1)" --time_based --runtime=120 ;;
    esac
    record ;;
  # ---- issue 33: a latency-sensitive application beside a bulk job, on storage they share ----
  # A volume with a throughput cap (tests/lab/slowfs.py cap:CAP_MBPS under a loop
  # device, its backing file in memory; a cloud disk's MB/s limit): alone, the
  # application's small requests are fast, and a bulk job's large ones saturate
  # it. $fs on it, its files made before the cap at memory speed; mounted fresh,
  # so the page cache is cold. The application is the victim (its cgroup); the
  # bulk job the neighbor (IODIAG_LAB_FAULT=0: the application alone).
  # Parameters:
  #   CAP_MBPS     the volume's throughput [100]
  #   VICTIM       the application [fio_read]:
  #                  fio_read       fio, 4 KiB random direct reads of a file: JOBS (1) jobs of BS (4k),
  #                                 THREADS=1 as threads of one process
  #                  sqlite_read    tests/lab/sqlite_lookup.py: point lookups, CLIENTS (2) threads
  #                  postgres_read  PostgreSQL, pgbench -S (select only, scale 16) with CLIENTS clients
  #                  fio_fsync, sqlite_commit, redis, postgres: durable commits (app_victim)
  #   NEIGHBOR_CG  unit: the neighbor in a unit of its own (bulk.service), none: where the lab runs [unit]
  #   bulk_reader_neighbor: BULK (fio: a sequential direct reader, libaio BULK_DEPTH (16) deep,
  #                BULK_JOBS (1) jobs, run as "backup", each at most BULK_RATE_PCT (0: no
  #                limit) % of the cap; dd: a shell loop of dd, BULK_DIRECT (1)
  #                iflag=direct, 0: buffered, dropping what it read from the cache) of BULK_BS (1m)
  #   same_name_neighbor: victim and neighbor run one command (SAME: python, python3 scripts;
  #                fio): the victim does VICTIM_IO (read: point lookups / random reads; commit:
  #                SQLite commits / fsynced writes), the neighbor BULK_RW (read, write) in
  #                BULK_MODE (direct, buffered; writes also fsync: one at the end of each pass)
  #   shell_writer_neighbor: WRITER (sh_dd:buffered), HOW:MODE the bulk writes are started
  #                (sh_dd: a `sh -c 'while dd ...; do :; done'` loop; script_dd, script_cp: a
  #                bash script looping over dd or cp) and made (buffered; fsync: conv=fsync or
  #                sync FILE after each pass; direct: oflag=direct), writes of WRITER_BS (1m);
  #                WBT=0 turns the device's writeback throttling off (wbt_lat_usec, restored),
  #                DIRTY_BG_MB (64) is vm.dirty_background_bytes (restored): where the flusher
  #                starts, as servers set it (at the default 10 % of this machine's memory a
  #                short run would never write back)
  #   shared_light (control): a bulk reader (fio) at LIGHT_PCT (5) % of the cap, 128k requests
  #   shared_bulk_alone (control): the bulk job alone (BULK_KIND reader|writer), as the only program
  bulk_reader_neighbor|same_name_neighbor|shell_writer_neighbor|shared_app_alone|shared_light|shared_bulk_alone)
    app=$(p VICTIM fio_read)
    if [[ $name == same_name_neighbor ]]; then   # the victim's program is the neighbor's
      case $(p SAME python):$(p VICTIM_IO read) in
        python:read) app=sqlite_read ;; python:*) app=sqlite_commit ;; fio:read) app=fio_read ;; *) app=fio_fsync ;;
      esac
    fi
    role=neighbor; [[ $name == shared_bulk_alone ]] && role=alone app=none
    # The bulk job's files: written before the cap, only where a bulk job runs
    bulk_files=0; if ((fault)) && [[ $name != shared_app_alone ]]; then bulk_files=1; fi
    size=4096
    back=$(mktemp -d /dev/shm/iodiag-lab-XXXXXX); undo+=("rm -rf $back")
    img=$back/disk.img; truncate -s ${size}M "$img"; mkfs_on "$img"
    mkdir "$work/prep"; mount -o loop "$img" "$work/prep"; undo+=("umount $work/prep")
    mkdir "$work/prep/app" "$work/prep/bulk"
    if ((bulk_files)); then dd if=/dev/zero of="$work/prep/bulk/src" bs=1M count=1024 status=none; fi
    case $app in
      fio_read)    dd if=/dev/zero of="$work/prep/app/data" bs=1M count=256 status=none ;;
      sqlite_read) python3 "$here/tests/lab/sqlite_lookup.py" build "$work/prep/app/lookup.db" 384 ;;
      postgres_read)
        pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
        chown postgres "$work/prep/app"; chmod 755 "$work"
        runuser -u postgres -- "$pgbin/initdb" -D "$work/prep/app/pgdata" -A trust >/dev/null
        port=$(free_port)
        undo+=("runuser -u postgres -- $pgbin/pg_ctl -D $work/prep/app/pgdata -m immediate stop")
        runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/prep/app/pgdata" -w -l "$work/prep/app/server.log" \
           -o "-p $port -k $work/prep/app -c listen_addresses=" start >/dev/null
        runuser -u postgres -- "$pgbin/pgbench" -h "$work/prep/app" -p "$port" -i -s 16 -q postgres >/dev/null 2>&1
        runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/prep/app/pgdata" -w stop >/dev/null ;;
    esac
    umount "$work/prep"
    slow_loop_on "cap:$(p CAP_MBPS 100)" $size "$back"
    mnt=$work/mnt; mkdir "$mnt"; mount "$dev" "$mnt"; undo+=("umount $mnt || umount -l $mnt")
    q=/sys/block/$(basename "$dev")/queue
    # -- the application (the victim)
    case $app in
      fio_read)
        threads=(); [[ $(p THREADS 0) == 1 ]] && threads=(--thread)
        victim -- fio --name=app --filename="$mnt/app/data" --rw=randread --bs="$(p BS 4k)" --direct=1 \
           --ioengine=psync --numjobs="$(p JOBS 1)" "${threads[@]}" --time_based --runtime=120 ;;
      sqlite_read)
        victim -- python3 "$here/tests/lab/sqlite_lookup.py" read "$mnt/app/lookup.db" "$(p CLIENTS 2)" ;;
      postgres_read)
        port=$(free_port); victim_dir
        undo+=("runuser -u postgres -- $pgbin/pg_ctl -D $mnt/app/pgdata -m immediate stop")
        sh -c "echo \$\$ > $victim_cg/cgroup.procs; exec runuser -u postgres -- $pgbin/pg_ctl -D $mnt/app/pgdata -w \
           -l $mnt/app/server.log -o '-p $port -k $mnt/app -c listen_addresses=' start" >/dev/null
        clients=$(p CLIENTS 2)
        bg runuser -u postgres -- "$pgbin/pgbench" -h "$mnt/app" -p "$port" -S -c "$clients" \
           -j "$(( clients < 2 ? 1 : 2 ))" -T 120 postgres ;;
      fio_fsync)     app_victim fio "$mnt/app" ;;
      sqlite_commit) app_victim sqlite "$mnt/app" ;;
      redis)         app_victim redis "$mnt/app" ;;
      postgres)      app_victim postgres "$mnt/app" ;;
      none) ;;   # shared_bulk_alone: no application
      *) echo "IODIAG_LAB_VICTIM=$app: fio_read, sqlite_read, postgres_read, fio_fsync, sqlite_commit, redis or postgres" >&2; exit 2 ;;
    esac
    # -- the bulk job (the neighbor; shared_bulk_alone: the only program, in the victims' group)
    if ((fault)) && [[ $name != shared_app_alone && $(p NEIGHBOR_CG unit) == unit && $role == neighbor ]]; then
      neighbor_unit bulk.service
    fi
    launch() { if [[ $role == alone ]]; then victim -- "$@"; else neighbor "$@"; fi; }
    backup=$work/backup; ln -s "$(command -v fio)" "$backup"
    # Sizes as 256k, 1m; dd takes them in capitals (dd: invalid number: '4m')
    bs=$(p BULK_BS 1m); bs_bytes=$(numfmt --from=iec "${bs^^}")
    sleep 1   # the application started first, as a server runs before a backup does
    case $name in
      bulk_reader_neighbor|shared_bulk_alone)
        kind=reader; [[ $name == shared_bulk_alone ]] && kind=$(p BULK_KIND reader)
        if [[ $kind == reader && $(p BULK fio) == fio ]]; then
          # BULK_RATE_PCT: a backup with a bandwidth limit of its own, per job (0: none)
          rate=(); pct=$(p BULK_RATE_PCT 0)
          ((pct > 0)) && rate=(--rate="$(( $(p CAP_MBPS 100) * pct / 100 ))m")
          launch "$backup" --name=bulk --filename="$mnt/bulk/src" --rw=read --bs="$bs" --direct=1 --ioengine=libaio \
             --iodepth="$(p BULK_DEPTH 16)" --numjobs="$(p BULK_JOBS 1)" "${rate[@]}" --time_based --runtime=120
        elif [[ $kind == reader ]]; then
          flag=iflag=direct; [[ $(p BULK_DIRECT 1) == 0 ]] && flag=iflag=nocache
          launch sh -c "while dd if=$mnt/bulk/src of=/dev/null bs=${bs^^} $flag status=none; do :; done"
        else
          launch sh -c "while dd if=/dev/zero of=$mnt/bulk/out bs=${bs^^} count=$(( (256 << 20) / bs_bytes )) status=none; do :; done"
        fi ;;
      same_name_neighbor)
        rw=$(p BULK_RW read) mode=$(p BULK_MODE direct)
        [[ $rw == read && $mode == fsync ]] && mode=buffered
        if [[ $(p SAME python) == python ]]; then
          launch python3 "$here/tests/lab/bulk_io.py" "$rw" "$mnt/bulk/$([[ $rw == read ]] && echo src || echo out)" \
             "$((bs_bytes / 1024))" "$mode" 256
        else
          direct=0; [[ $mode == direct ]] && direct=1
          fsync_end=(); [[ $mode == fsync ]] && fsync_end=(--end_fsync=1)
          target=(--filename="$mnt/bulk/src"); [[ $rw == write ]] && target=(--filename="$mnt/bulk/out" --size=256m)
          # Passes (loops) rather than time_based: fio drops the file's cached pages
          # before each (invalidate=1), so buffered reads read the storage every pass
          launch fio --name=bulk "${target[@]}" --rw="$rw" --bs="$bs" --direct=$direct --ioengine=psync \
             "${fsync_end[@]}" --invalidate=1 --loops=10000 --runtime=120
        fi ;;
      shell_writer_neighbor)
        if ((fault)); then
          set_dirty_bytes dirty_background $(( $(p DIRTY_BG_MB 64) * 1024 * 1024 ))
          if [[ $(p WBT 1) == 0 && -w $q/wbt_lat_usec ]]; then
            undo+=("echo $(cat $q/wbt_lat_usec) > $q/wbt_lat_usec"); echo 0 > $q/wbt_lat_usec
          fi
        fi
        writer=$(p WRITER sh_dd:buffered); how=${writer%%:*} mode=${writer#*:}
        bs=$(p WRITER_BS 1m); bs_bytes=$(numfmt --from=iec "${bs^^}")
        count=$(( 256 * 1024 * 1024 / bs_bytes ))
        flags=""; case $mode in fsync) flags=conv=fsync ;; direct) flags=oflag=direct ;; esac
        case $how in
          sh_dd)
            launch sh -c "while dd if=/dev/zero of=$mnt/bulk/out bs=${bs^^} count=$count $flags status=none; do :; done" ;;
          script_dd|script_cp)
            script=$work/backup.sh
            {
              echo '#!/bin/bash'
              echo '# a nightly-backup-like script: copies, again and again'
              echo 'set -e'
              echo 'while :; do'
              if [[ $how == script_dd ]]; then
                echo "  dd if=/dev/zero of=$mnt/bulk/out bs=${bs^^} count=$count $flags status=none"
              else
                echo "  cp $mnt/bulk/src $mnt/bulk/copy"
                [[ $mode == fsync ]] && echo "  sync $mnt/bulk/copy"
              fi
              echo 'done'
            } > "$script"
            chmod +x "$script"; launch "$script" ;;
        esac ;;
      shared_light)   # far from saturated: a reader at LIGHT_PCT % of the cap
        rate=$(( $(p CAP_MBPS 100) * $(p LIGHT_PCT 5) / 100 )); ((rate >= 1)) || rate=1
        launch "$backup" --name=bulk --filename="$mnt/bulk/src" --rw=read --bs=128k --direct=1 --ioengine=psync \
           --rate="${rate}m" --time_based --runtime=120 ;;
    esac
    record ;;
  *) echo "unknown scenario $name" >&2; exit 2 ;;
esac
echo "recorded $name -> $out"
