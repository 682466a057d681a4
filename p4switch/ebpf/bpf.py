"""libbpf through ctypes: open/load a BPF object, map reads and writes, ``BPF_PROG_TEST_RUN``,
tc clsact attach/detach.

Why libbpf via ctypes (and not bpftool JSON or the tc command): libbpf is the kernel's own
loader library (Debian's libbpf1, a dependency of libbpf-dev), it keeps program and map file
descriptors in this process (nothing pinned under /sys/fs/bpf to clean up), and a map update is
one C call instead of a subprocess. The tc attachment (``bpf_tc_hook_create``/``bpf_tc_attach``)
outlives the process, so ``TcAttachment.detach`` removes the clsact qdisc it created.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from dataclasses import dataclass
from pathlib import Path

_lib: ctypes.CDLL | None = None

BPF_TC_INGRESS = 1
BPF_TC_EGRESS = 2
BPF_ANY = 0
TC_ACT_OK = 0
TC_ACT_SHOT = 2
TC_ACT_REDIRECT = 7
SKB_CTX_SIZE = 192  # sizeof(struct __sk_buff) on this kernel ABI
_SKB_MARK_OFFSET = 8


class BpfError(OSError):
    """A libbpf call failed (errno and what was attempted)."""


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        path = ctypes.util.find_library("bpf") or "libbpf.so.1"
        L = ctypes.CDLL(path, use_errno=True)
        vp, cp, i, u32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32
        L.bpf_object__open_file.restype = vp
        L.bpf_object__open_file.argtypes = [cp, vp]
        L.bpf_object__load.argtypes = [vp]
        L.bpf_object__close.argtypes = [vp]
        L.bpf_object__close.restype = None
        L.bpf_object__find_map_fd_by_name.argtypes = [vp, cp]
        L.bpf_object__find_program_by_name.restype = vp
        L.bpf_object__find_program_by_name.argtypes = [vp, cp]
        L.bpf_program__fd.argtypes = [vp]
        L.bpf_map_update_elem.argtypes = [i, vp, vp, ctypes.c_uint64]
        L.bpf_map_lookup_elem.argtypes = [i, vp, vp]
        L.bpf_map_delete_elem.argtypes = [i, vp]
        L.bpf_map_get_next_key.argtypes = [i, vp, vp]
        L.bpf_prog_test_run_opts.argtypes = [i, vp]
        L.bpf_tc_hook_create.argtypes = [vp]
        L.bpf_tc_hook_destroy.argtypes = [vp]
        L.bpf_tc_attach.argtypes = [vp, vp]
        L.libbpf_num_possible_cpus.argtypes = []
        L.ring_buffer__new.restype = vp
        L.ring_buffer__new.argtypes = [i, vp, vp, vp]
        L.ring_buffer__poll.argtypes = [vp, i]
        L.ring_buffer__consume.argtypes = [vp]
        L.ring_buffer__free.argtypes = [vp]
        L.ring_buffer__free.restype = None
        L.libbpf_set_print.argtypes = [vp]
        L.libbpf_set_print.restype = vp
        del u32
        _lib = L
    return _lib


def _check(rc: int, what: str) -> int:
    if rc < 0:
        e = -rc if rc != -1 else ctypes.get_errno()
        raise BpfError(e, f"{what}: {os.strerror(e)}")
    return rc


def num_cpus() -> int:
    return lib().libbpf_num_possible_cpus()


class _TestRunOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("data_in", ctypes.c_void_p),
                ("data_out", ctypes.c_void_p), ("data_size_in", ctypes.c_uint32),
                ("data_size_out", ctypes.c_uint32), ("ctx_in", ctypes.c_void_p),
                ("ctx_out", ctypes.c_void_p), ("ctx_size_in", ctypes.c_uint32),
                ("ctx_size_out", ctypes.c_uint32), ("retval", ctypes.c_uint32),
                ("repeat", ctypes.c_int), ("duration", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("cpu", ctypes.c_uint32),
                ("batch_size", ctypes.c_uint32)]


class _TcHook(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("ifindex", ctypes.c_int),
                ("attach_point", ctypes.c_int), ("parent", ctypes.c_uint32)]


class _TcOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("prog_fd", ctypes.c_int), ("flags", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("handle", ctypes.c_uint32),
                ("priority", ctypes.c_uint32)]


@dataclass
class Map:
    """One map of a loaded object: fixed key and value sizes (per-CPU values: one per CPU)."""

    fd: int
    key_size: int
    value_size: int
    percpu: bool = False

    def _vbuf(self) -> ctypes.Array:
        n = self.value_size
        if self.percpu:
            n = ((self.value_size + 7) // 8) * 8 * num_cpus()
        return ctypes.create_string_buffer(n)

    def update(self, key: bytes, value: bytes) -> None:
        k = ctypes.create_string_buffer(key, self.key_size)
        v = ctypes.create_string_buffer(value, len(value))
        _check(lib().bpf_map_update_elem(self.fd, k, v, BPF_ANY), "map update")

    def lookup(self, key: bytes) -> bytes | None:
        k = ctypes.create_string_buffer(key, self.key_size)
        v = self._vbuf()
        rc = lib().bpf_map_lookup_elem(self.fd, k, v)
        if rc < 0:
            if ctypes.get_errno() == errno.ENOENT or rc == -errno.ENOENT:
                return None
            _check(rc, "map lookup")
        return v.raw

    def delete(self, key: bytes) -> bool:
        k = ctypes.create_string_buffer(key, self.key_size)
        rc = lib().bpf_map_delete_elem(self.fd, k)
        if rc < 0:
            if ctypes.get_errno() == errno.ENOENT or rc == -errno.ENOENT:
                return False
            _check(rc, "map delete")
        return True

    def percpu_values(self, key: bytes) -> list[bytes]:
        """Each CPU's value of a per-CPU map element."""
        raw = self.lookup(key) or b""
        step = ((self.value_size + 7) // 8) * 8
        return [raw[i * step:i * step + self.value_size] for i in range(num_cpus())]

    def percpu_update(self, key: bytes, first: bytes) -> None:
        """Set a per-CPU element: ``first`` on CPU 0, zeros elsewhere."""
        step = ((self.value_size + 7) // 8) * 8
        buf = first.ljust(step, b"\0") + bytes(step * (num_cpus() - 1))
        self.update(key, buf)


class BpfObject:
    """A compiled BPF object file, opened and loaded (programs verified, maps created)."""

    def __init__(self, path: Path) -> None:
        L = lib()
        self._obj = L.bpf_object__open_file(str(path).encode(), None)
        if not self._obj:
            raise BpfError(ctypes.get_errno() or errno.EINVAL, f"cannot open {path}")
        rc = L.bpf_object__load(self._obj)
        if rc < 0:
            L.bpf_object__close(self._obj)
            self._obj = None
            e = -rc
            raise BpfError(e, f"loading {path} failed (the verifier's log is on stderr): "
                              f"{os.strerror(e)}")

    def prog_fd(self, name: str) -> int:
        prog = lib().bpf_object__find_program_by_name(self._obj, name.encode())
        if not prog:
            raise BpfError(errno.ENOENT, f"no program {name}")
        return _check(lib().bpf_program__fd(prog), f"program {name}")

    def map(self, name: str, key_size: int, value_size: int, percpu: bool = False) -> Map:
        fd = lib().bpf_object__find_map_fd_by_name(self._obj, name.encode())
        _check(fd, f"map {name}")
        return Map(fd, key_size, value_size, percpu)

    def close(self) -> None:
        if self._obj:
            lib().bpf_object__close(self._obj)
            self._obj = None


def test_run(prog_fd: int, data: bytes, mark: int, repeat: int = 1) -> tuple[int, bytes, int]:
    """Run a sched_cls program on ``data`` with ``skb->mark = mark`` (``repeat`` times, in
    the kernel, on the calling CPU): (return code, packet bytes after the program, skb->mark
    after it)."""
    inb = ctypes.create_string_buffer(data, len(data))
    outb = ctypes.create_string_buffer(len(data) + 512)
    ctx_in = bytearray(SKB_CTX_SIZE)
    ctx_in[_SKB_MARK_OFFSET:_SKB_MARK_OFFSET + 4] = mark.to_bytes(4, "little")
    cin = ctypes.create_string_buffer(bytes(ctx_in), SKB_CTX_SIZE)
    cout = ctypes.create_string_buffer(SKB_CTX_SIZE)
    o = _TestRunOpts(sz=ctypes.sizeof(_TestRunOpts),
                     data_in=ctypes.cast(inb, ctypes.c_void_p),
                     data_out=ctypes.cast(outb, ctypes.c_void_p), data_size_in=len(data),
                     data_size_out=len(outb), ctx_in=ctypes.cast(cin, ctypes.c_void_p),
                     ctx_out=ctypes.cast(cout, ctypes.c_void_p), ctx_size_in=SKB_CTX_SIZE,
                     ctx_size_out=SKB_CTX_SIZE, repeat=repeat)
    _check(lib().bpf_prog_test_run_opts(prog_fd, ctypes.byref(o)), "BPF_PROG_TEST_RUN")
    mark_out = int.from_bytes(cout.raw[_SKB_MARK_OFFSET:_SKB_MARK_OFFSET + 4], "little")
    return o.retval, outb.raw[:o.data_size_out], mark_out


_RingCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


class RingBuffer:
    """A BPF ring buffer map read from user space (libbpf's ring_buffer): ``consume`` returns
    the records the program has submitted since the last call, oldest first."""

    def __init__(self, map_fd: int) -> None:
        self._records: list[bytes] = []
        self._cb = _RingCallback(self._on_record)  # kept: libbpf calls it later
        self._rb = lib().ring_buffer__new(map_fd, ctypes.cast(self._cb, ctypes.c_void_p),
                                          None, None)
        if not self._rb:
            _check(-ctypes.get_errno() or -errno.EINVAL, "ring_buffer__new")

    def _on_record(self, _ctx: int | None, data: int | None, size: int) -> int:
        self._records.append(ctypes.string_at(data or 0, size))
        return 0

    def consume(self, timeout_ms: int = 0) -> list[bytes]:
        """Records available now (after waiting up to ``timeout_ms`` for the first one)."""
        if self._rb:
            if timeout_ms:
                lib().ring_buffer__poll(self._rb, timeout_ms)
            lib().ring_buffer__consume(self._rb)
        out, self._records = self._records, []
        return out

    def close(self) -> None:
        if self._rb:
            lib().ring_buffer__free(self._rb)
            self._rb = None


@dataclass
class TcAttachment:
    """``prog_fd`` on the clsact ingress hook of one interface."""

    ifindex: int
    created_qdisc: bool

    @classmethod
    def attach(cls, ifindex: int, prog_fd: int) -> TcAttachment:
        hook = _TcHook(sz=ctypes.sizeof(_TcHook), ifindex=ifindex, attach_point=BPF_TC_INGRESS)
        rc = lib().bpf_tc_hook_create(ctypes.byref(hook))
        created = rc == 0
        if rc < 0 and rc != -errno.EEXIST:
            _check(rc, f"clsact on ifindex {ifindex}")
        opts = _TcOpts(sz=ctypes.sizeof(_TcOpts), prog_fd=prog_fd, handle=1, priority=1,
                       flags=1)  # BPF_TC_F_REPLACE
        _check(lib().bpf_tc_attach(ctypes.byref(hook), ctypes.byref(opts)),
               f"tc attach on ifindex {ifindex}")
        return cls(ifindex, created)

    def detach(self) -> None:
        """Remove the clsact qdisc (and with it the filter); an interface already gone is
        fine."""
        hook = _TcHook(sz=ctypes.sizeof(_TcHook), ifindex=self.ifindex,
                       attach_point=BPF_TC_INGRESS | BPF_TC_EGRESS)
        lib().bpf_tc_hook_destroy(ctypes.byref(hook))
