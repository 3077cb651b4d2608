# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bpf() system call, through ctypes (stdlib): an array map made, a classifier loaded with the map's descriptor
in its ld_imm64 instructions, a map or program found again by id, one entry read or written, an object's info.

The attribute layouts are ``union bpf_attr``'s and ``struct bpf_map_info``'s in include/uapi/linux/bpf.h (offsets in
the comments); every call zeroes the rest of the union, as the kernel requires.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

# __NR_bpf per architecture (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h)
_NR_BPF = {"x86_64": 321, "aarch64": 280, "arm64": 280, "ppc64le": 361, "s390x": 351, "riscv64": 280}
BPF_MAP_CREATE, BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM, BPF_PROG_LOAD = 0, 1, 2, 5
BPF_PROG_GET_FD_BY_ID, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 13, 14, 15
BPF_MAP_TYPE_ARRAY = 2
BPF_PROG_TYPE_SCHED_CLS = 3
BPF_PSEUDO_MAP_FD = 1
ATTR_SIZE = 128  # more than every command below reads
OBJ_NAME_LEN = 16
LOG_SIZE = 1 << 20


class BpfError(OSError):
    """A refused bpf() call; ``log`` holds the verifier's log for a refused program."""

    def __init__(self, code, what, log=""):
        super().__init__(code, "%s: %s" % (what, os.strerror(code)))
        self.log = log


_libc = None


def _syscall(cmd, attr, what):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    number = _NR_BPF.get(platform.machine())
    if number is None:
        raise BpfError(errno.ENOSYS, "%s: no bpf() syscall number known for %s" % (what, platform.machine()))
    ret = _libc.syscall(ctypes.c_long(number), ctypes.c_int(cmd), attr, ctypes.c_uint(ctypes.sizeof(attr)))
    if ret < 0:
        raise BpfError(ctypes.get_errno(), what)
    return ret


def _attr(layout, *values):
    buf = ctypes.create_string_buffer(ATTR_SIZE)
    struct.pack_into(layout, buf, 0, *values)
    return buf


def _name(text):
    return text.encode("ascii")[:OBJ_NAME_LEN - 1]


def map_create(value_size, name, key_size=4, max_entries=1, map_type=BPF_MAP_TYPE_ARRAY):
    """A new map's file descriptor. Layout: map_type @0, key_size @4, value_size @8, max_entries @12, map_flags @16,
    inner_map_fd @20, numa_node @24, map_name[16] @28."""
    attr = _attr("<IIIIIII16s", map_type, key_size, value_size, max_entries, 0, 0, 0, _name(name))
    return _syscall(BPF_MAP_CREATE, attr, "creating the map %s" % name)


def relocate(insns, relocations, map_fd):
    """The instructions with ``map_fd`` in each ld_imm64 at ``relocations`` (src_reg BPF_PSEUDO_MAP_FD, imm the fd)."""
    out = bytearray(insns)
    for index in relocations:
        base = index * 8
        if out[base] != 0x18:
            raise ValueError("instruction %d is not an ld_imm64 (opcode 0x%02x)" % (index, out[base]))
        out[base + 1] = (out[base + 1] & 0x0F) | (BPF_PSEUDO_MAP_FD << 4)
        struct.pack_into("<i", out, base + 4, map_fd)
    return bytes(out)


def prog_load(insns, license_, name, prog_type=BPF_PROG_TYPE_SCHED_CLS):
    """A loaded program's file descriptor; a refusal carries the verifier's log. Layout: prog_type @0, insn_cnt @4,
    insns @8, license @16, log_level @24, log_size @28, log_buf @32, kern_version @40, prog_flags @44,
    prog_name[16] @48."""
    code = ctypes.create_string_buffer(bytes(insns), len(insns))
    lic = ctypes.create_string_buffer(license_.encode("ascii"))
    log = ctypes.create_string_buffer(LOG_SIZE)
    attr = _attr("<IIQQIIQII16s", prog_type, len(insns) // 8, ctypes.addressof(code), ctypes.addressof(lic), 1,
                 LOG_SIZE, ctypes.addressof(log), 0, 0, _name(name))
    try:
        return _syscall(BPF_PROG_LOAD, attr, "loading the program %s" % name)
    except BpfError as exc:
        raise BpfError(exc.errno, "loading the program %s" % name, log.value.decode("ascii", "replace")) from None


def map_lookup(fd, value_size, key=0):
    """Entry ``key`` (u32) of an array map, as bytes. Layout: map_fd @0, key @8, value @16, flags @24."""
    k = ctypes.create_string_buffer(struct.pack("<I", key), 4)
    value = ctypes.create_string_buffer(value_size)
    _syscall(BPF_MAP_LOOKUP_ELEM, _attr("<IIQQQ", fd, 0, ctypes.addressof(k), ctypes.addressof(value), 0),
             "reading the map")
    return value.raw


def map_update(fd, data, key=0):
    k = ctypes.create_string_buffer(struct.pack("<I", key), 4)
    value = ctypes.create_string_buffer(bytes(data), len(data))
    _syscall(BPF_MAP_UPDATE_ELEM, _attr("<IIQQQ", fd, 0, ctypes.addressof(k), ctypes.addressof(value), 0),
             "writing the map")


def map_fd_by_id(map_id):
    return _syscall(BPF_MAP_GET_FD_BY_ID, _attr("<III", map_id, 0, 0), "opening map id %d" % map_id)


def prog_fd_by_id(prog_id):
    return _syscall(BPF_PROG_GET_FD_BY_ID, _attr("<III", prog_id, 0, 0), "opening program id %d" % prog_id)


def _info(fd, size):
    info = ctypes.create_string_buffer(size)
    _syscall(BPF_OBJ_GET_INFO_BY_FD, _attr("<IIQ", fd, size, ctypes.addressof(info)), "reading an object's info")
    return info.raw


def map_info(fd):
    """``struct bpf_map_info``'s first fields: type @0, id @4, key_size @8, value_size @12, max_entries @16,
    map_flags @20, name[16] @24."""
    raw = _info(fd, 40)
    typ, map_id, key_size, value_size, max_entries, _flags = struct.unpack_from("<IIIIII", raw, 0)
    return {"type": typ, "id": map_id, "key_size": key_size, "value_size": value_size, "max_entries": max_entries,
            "name": raw[24:40].split(b"\0", 1)[0].decode("ascii", "replace")}


def prog_info(fd):
    """``struct bpf_prog_info``'s type @0, id @4, nr_map_ids @52, name[16] @64 (the map ids need a second call with
    a buffer at map_ids @56; the marker's program has one map, whose id its filter's name carries)."""
    raw = _info(fd, 80)
    typ, prog_id = struct.unpack_from("<II", raw, 0)
    nr_maps, = struct.unpack_from("<I", raw, 52)
    return {"type": typ, "id": prog_id, "nr_map_ids": nr_maps,
            "name": raw[64:80].split(b"\0", 1)[0].decode("ascii", "replace")}
