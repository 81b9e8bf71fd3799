# Sourced by the shell scripts that attach loop devices (tests/lab/scenario.sh,
# tests/ceph/cluster.sh). A loop device keeps its queue settings after it is
# detached, and the kernel changes some of them when it attaches one: over a
# file on a rotational disk it becomes rotational, writeback throttling takes
# the rotational target (75 ms) and the readahead window follows the backing
# file's preferred I/O size. A script that only detaches leaves the next user
# of that loopN (and every later diagnosis of the machine) with them.

# loop_queue_restore DEV: prints the commands that put DEV's queue settings
# back as they are now; read before attaching, run after detaching. The
# rotational flag comes first (the kernel keeps the backing file's after the
# detach), then the scheduler: choosing one resets nr_requests.
loop_queue_restore() {
  local q k v cmds=()
  q=/sys/block/$(basename "$1")/queue
  for k in rotational scheduler nr_requests read_ahead_kb wbt_lat_usec max_sectors_kb; do
    [[ -w $q/$k ]] && v=$(cat "$q/$k" 2>/dev/null) || continue
    if [[ $k == scheduler ]]; then
      [[ $v =~ \[([^]]+)\] ]] || continue
      v=${BASH_REMATCH[1]}
    fi
    cmds+=("echo $v > $q/$k")
  done
  local IFS=';'
  echo "${cmds[*]:-true}"
}
