# BPF build pipeline: for every bpf/<name>.bpf.c
#   clang -target bpf -mcpu=v3 -g -O2  ->  <build>/bpf/<name>.bpf.o
# -mcpu=v3 (Linux 5.12+ for its atomics) makes __sync_fetch_and_add return the
# old value as one atomic instruction (BPF_FETCH): the block collector's
# queue depth at issue is that value, exact under concurrent issues.
#   bpftool gen skeleton      ->  <build>/bpf/<name>.skel.h   (#include "<name>.skel.h")
# vmlinux.h comes from the build host's BTF (/sys/kernel/btf/vmlinux), or from
# -DIODIAG_VMLINUX_H=/path/vmlinux.h. CO-RE relocates field offsets at load time,
# so one vmlinux.h serves any kernel with BTF.
#
# A build host without BTF and without IODIAG_VMLINUX_H still builds iodiag:
# IODIAG_HAVE_BPF is then 0 and every BPF collector reports itself unavailable
# with that reason, instead of the build failing.

find_program(BPF_CLANG NAMES clang clang-16 clang-15 clang-14)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin)
set(IODIAG_VMLINUX_H "" CACHE FILEPATH "vmlinux.h to use instead of generating one from /sys/kernel/btf/vmlinux")

set(BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${BPF_OUT})
add_library(iodiag_bpf INTERFACE)
target_include_directories(iodiag_bpf INTERFACE ${BPF_OUT})

set(_bpf_ok FALSE)
if(BPF_CLANG AND BPFTOOL)
  if(IODIAG_VMLINUX_H)
    configure_file(${IODIAG_VMLINUX_H} ${BPF_OUT}/vmlinux.h COPYONLY)
    set(_bpf_ok TRUE)
  elseif(EXISTS /sys/kernel/btf/vmlinux)
    add_custom_command(OUTPUT ${BPF_OUT}/vmlinux.h
      COMMAND ${BPFTOOL} btf dump file /sys/kernel/btf/vmlinux format c > ${BPF_OUT}/vmlinux.h
      COMMENT "Generating vmlinux.h from /sys/kernel/btf/vmlinux")
    set(_bpf_ok TRUE)
  endif()
endif()

if(_bpf_ok)
  string(TOLOWER ${CMAKE_SYSTEM_PROCESSOR} _arch)
  if(_arch MATCHES "x86_64|amd64")
    set(_bpf_arch x86)
  elseif(_arch MATCHES "aarch64|arm64")
    set(_bpf_arch arm64)
  else()
    set(_bpf_arch ${_arch})
  endif()
  # <build>/bpf/<name>.bpf.o and <name>.skel.h from one .bpf.c; the skeleton's
  # path is appended to the list named by `out`.
  function(iodiag_bpf_skeleton src out)
    get_filename_component(_name ${src} NAME_WE)   # "block" for block.bpf.c
    set(_obj ${BPF_OUT}/${_name}.bpf.o)
    set(_skel ${BPF_OUT}/${_name}.skel.h)
    add_custom_command(OUTPUT ${_obj}
      COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${_bpf_arch}
              -I${BPF_OUT} -I${PROJECT_SOURCE_DIR}/bpf -c ${src} -o ${_obj}
      DEPENDS ${src} ${BPF_OUT}/vmlinux.h
      IMPLICIT_DEPENDS C ${src}
      COMMENT "BPF ${_name}.bpf.c")
    add_custom_command(OUTPUT ${_skel}
      COMMAND ${BPFTOOL} gen skeleton ${_obj} name ${_name}_bpf > ${_skel}
      DEPENDS ${_obj}
      COMMENT "Skeleton ${_name}.skel.h")
    set(${out} ${${out}} ${_skel} PARENT_SCOPE)
  endfunction()
  file(GLOB BPF_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bpf/*.bpf.c)
  set(_skels "")
  foreach(src ${BPF_SOURCES})
    iodiag_bpf_skeleton(${src} _skels)
  endforeach()
  add_custom_target(iodiag_bpf_skeletons DEPENDS ${_skels})
  add_dependencies(iodiag_bpf iodiag_bpf_skeletons)
  target_compile_definitions(iodiag_bpf INTERFACE IODIAG_HAVE_BPF=1)
  message(STATUS "iodiag: BPF collectors enabled (clang ${BPF_CLANG}, bpftool ${BPFTOOL})")
else()
  target_compile_definitions(iodiag_bpf INTERFACE IODIAG_HAVE_BPF=0)
  message(WARNING "iodiag: building WITHOUT BPF collectors: need clang, bpftool and "
                  "/sys/kernel/btf/vmlinux (or -DIODIAG_VMLINUX_H=...)")
endif()
