"""Thin ctypes wrappers for the Linux calls Python 3.11 lacks: unshare, setns, mount, pivot_root, prctl, seccomp.

Standard library only: the bwrap backend loads this module from source inside the sandbox (bwrap.py).
"""

from __future__ import annotations

import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

SYS_PIVOT_ROOT = 155  # x86_64


def _check(result: int, what: str) -> int:
    """Raise OSError (with errno and `what`) when a libc call returned -1."""
    if result == -1:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def syscall(number: int, *arguments) -> int:
    """A raw syscall; integer arguments are passed as C longs."""
    converted = [ctypes.c_long(argument) if isinstance(argument, int) else argument for argument in arguments]
    return _check(_libc.syscall(ctypes.c_long(number), *converted), f"syscall {number}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def setns(fd: int, flags: int) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(flags)), f"setns({flags:#x})")


def mount(source: str | None, target: str, filesystem: str | None, flags: int, options: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    result = _libc.mount(encode(source), encode(target), encode(filesystem), ctypes.c_ulong(flags), encode(options))
    _check(result, f"mount {source} on {target}")


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    _check(_libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT), new_root.encode(), put_old.encode()), "pivot_root")


def prctl(option: int, argument: int = 0, pointer=None) -> None:
    """prctl(option, argument, pointer); pointer is a ctypes byref() or None."""
    third = ctypes.c_ulong(0) if pointer is None else pointer
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(argument), third, ctypes.c_ulong(0), ctypes.c_ulong(0)),
           f"prctl({option})")


def drop_to_user(uid: int, gid: int) -> None:
    """Become uid/gid for good (real, effective and saved ids; no supplementary groups)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


class SockFilterProgram(ctypes.Structure):
    _fields_ = [("length", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(program: bytes) -> None:
    """Install a BPF program (struct sock_filter[]) on this thread's process; sets no_new_privs first.

    Filters stack: each one loaded adds to those already in force, none can be removed.
    """
    buffer = ctypes.create_string_buffer(program, len(program))
    header = SockFilterProgram(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(header))
