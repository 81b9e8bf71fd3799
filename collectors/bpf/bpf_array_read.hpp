// Reading BPF maps from user space after the window: a whole array map in as
// few system calls as the kernel allows (the collectors' finish() reads tables
// of 512-4096 slots when every millisecond is on the way to the verdict, and
// one lookup per slot is one system call per slot), and the per-CPU hash maps
// that take what does not fit in them, entry by entry.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <bpf/bpf.h>

namespace iodiag {

// Every element of the array map `fd` (indexes 0 .. entries-1), `elem_bytes`
// each (a per-CPU map: its value size rounded up to 8, times the possible
// CPUs, as one lookup returns it), handed to `fn` in index order a chunk at a
// time, in a buffer of `chunk` elements reused from one chunk to the next (a
// fresh buffer for the whole table costs more page faults than the reads).
// One BPF_MAP_LOOKUP_BATCH (Linux 5.6) per chunk where the kernel has it for
// this map, otherwise one lookup per element; an element whose lookup fails
// reads as zeroes. `buf` must hold chunk * elem_bytes bytes. Returns how many
// elements were really read.
size_t read_array_map(int fd, uint32_t entries, size_t elem_bytes, unsigned char* buf, uint32_t chunk,
                      const std::function<void(uint32_t first, uint32_t n)>& fn);

// The same for a per-CPU array of T: fn(index, cpu, copy) for every CPU's
// copy of every element, elements in index order, each one's copies in CPU
// order. T's size must be a multiple of 8 (the kernel lays per-CPU copies out
// 8-byte aligned).
template <class T, class Fn>
size_t for_each_percpu_array_copy(int fd, uint32_t entries, int ncpu, Fn&& fn) {
    static_assert(sizeof(T) % 8 == 0, "per-CPU copies are 8-byte aligned: pad the value type");
    // No bigger than the table, and about 128 KiB at most: an element may be
    // a group of slots (kilobytes, times the CPUs), and every page of the
    // buffer is a fresh page fault (a 1.1 MiB buffer: ~7 ms of a finish).
    const size_t per_element = sizeof(T) * size_t(std::max(ncpu, 1));
    const uint32_t chunk = static_cast<uint32_t>(
        std::max<size_t>(1, std::min<size_t>({64, entries, (size_t(128) << 10) / per_element})));
    std::vector<T> buf(size_t(chunk) * size_t(ncpu));
    return read_array_map(fd, entries, sizeof(T) * size_t(ncpu), reinterpret_cast<unsigned char*>(buf.data()), chunk,
                          [&](uint32_t first, uint32_t n) {
                              for (uint32_t i = 0; i < n; ++i)
                                  for (int c = 0; c < ncpu; ++c) fn(first + i, c, buf[size_t(i) * size_t(ncpu) + size_t(c)]);
                          });
}

// Every entry of the per-CPU hash map `fd` (keys K, values V per CPU):
// fn(key, copies) with one copy per possible CPU, in the kernel's key order.
// For reads after the programs are detached: an entry deleted between the
// key walk and its lookup is skipped. V's size must be a multiple of 8.
template <class K, class V, class Fn>
void for_each_percpu_hash_entry(int fd, int ncpu, Fn&& fn) {
    static_assert(sizeof(V) % 8 == 0, "per-CPU copies are 8-byte aligned: pad the value type");
    std::vector<V> copies(static_cast<size_t>(ncpu));
    K key{}, next{};
    const K* prev = nullptr;
    while (bpf_map_get_next_key(fd, prev, &next) == 0) {
        if (bpf_map_lookup_elem(fd, &next, copies.data()) == 0) fn(next, copies);
        key = next;
        prev = &key;
    }
}

// The same for a plain (not per-CPU) hash map of V: fn(key, value). Its
// lookup fills one value, as a per-CPU map's does with a single CPU.
template <class K, class V, class Fn>
void for_each_hash_entry(int fd, Fn&& fn) {
    for_each_percpu_hash_entry<K, V>(fd, 1, [&](const K& key, const std::vector<V>& one) { fn(key, one[0]); });
}

}  // namespace iodiag
