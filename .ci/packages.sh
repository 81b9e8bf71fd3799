# Sourced by .ci/setup and .ci/test: the Debian 12 packages each one needs,
# and how they are installed (only those missing; as root; waiting for
# another apt run instead of failing on its lock).

# Building and running iodiag: what the first run (.ci/setup) installs.
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libbpf-dev bpftool libelf-dev zlib1g-dev             # CO-RE BPF programs and skeletons
  libboost-graph-dev libyaml-cpp-dev libspdlog-dev           # decision graph, rules, logging
  libcli11-dev nlohmann-json3-dev                            # arguments, JSON
  libsystemd-dev                                             # --journal (sd_journal_sendv)
)

# The tests only: what the test command (.ci/test) adds.
TEST_PACKAGES=(
  libgtest-dev libgmock-dev                                  # unit and live tests
  fio bpftrace xfsprogs btrfs-progs e2fsprogs util-linux kmod stress-ng   # live tests, scenarios, benchmark
  linux-perf redis-server redis-tools                        # benchmark only: tests/bench/non_io_tax.py (perf bench; a real server, started on localhost by it)
  postgresql                                                 # the lab's real application (transactions beside a big writer)
  python3-fusepy                                             # the lab's slow devices (tests/lab/slowfs.py: FUSE under a loop device)
  prometheus prometheus-node-exporter prometheus-alertmanager   # fleet integration test (started by the test on localhost)
  python3-jsonschema                                         # outputs validated against the shipped JSON Schemas
  dpkg-dev fakeroot file lintian man-db                      # cpack -G DEB, its content check, lintian, `man iodiag`
  systemd                                                    # systemd-analyze verify of the units (not run as PID 1)
  chromium                                                   # the HTML report, tested in a headless browser
  llvm libclang-rt-14-dev libfuzzer-14-dev                   # sanitizer builds (llvm-symbolizer) and libFuzzer targets
  ceph-mon ceph-mgr ceph-osd ceph-common                     # the live Ceph cluster (started by the test)
)

# install_packages PACKAGE...: installs those not installed yet.
install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "iodiag: missing packages (${missing[*]}); run as root to install them" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  local apt_opts=(-o DPkg::Lock::Timeout=600)
  apt-get "${apt_opts[@]}" update -q
  apt-get "${apt_opts[@]}" install -y -q --no-install-recommends "${missing[@]}"
}

# The build directory's configuration, the same for the first run and the
# test command so that the test command reuses what the first run built:
# -O2 without debug information (-g makes a translation unit ~30 % slower to
# compile here; the package strips it anyway), the libraries in unity batches
# (cmake/unity_build.cmake), and ccache_launcher.
iodiag_cmake_options() {
  local opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG"
              -DIODIAG_UNITY=ON)
  ninja_for_new_build "${1:-build}" opts
  ccache_launcher opts
  printf '%s\n' "${opts[@]}"
}

# ninja_for_new_build DIR ARRAY: appends -G Ninja when DIR is not configured
# yet and ninja is installed (BUILD_PACKAGES has it). Ninja compiles a
# library's files while the libraries it links to are still compiling, where
# make's order by target leaves one of the two cores idle. A directory made
# before keeps the generator it was made with.
ninja_for_new_build() {
  local -n to=$2
  if command -v ninja >/dev/null && [[ ! -f $1/CMakeCache.txt ]]; then
    to+=(-G Ninja)
  fi
}

# ccache_launcher ARRAY: appends ccache as the compiler launcher when it is
# installed (a rebuild in a fresh clone or build directory, CI's included,
# takes what an earlier build compiled): paths relative to the checkout, so
# that clones in other directories share entries, and the sloppiness ccache
# needs to cache translation units that use a precompiled header.
ccache_launcher() {
  command -v ccache >/dev/null || return 0
  local -n into=$1
  local launcher="env;CCACHE_BASEDIR=$PWD;CCACHE_SLOPPINESS=pch_defines,time_macros;ccache"
  into+=(-DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
}
