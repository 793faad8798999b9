"""Landlock through raw syscalls (x86_64): read-only and read-write path rules, no TCP, scoped signals.

Rights a kernel does not know are left out according to its ABI version, so the ruleset handles
everything that kernel can restrict. Needs no_new_privs (or CAP_SYS_ADMIN) before restrict_self().
"""

from __future__ import annotations

import ctypes
import os

from grading.sandbox.linux import PR_SET_NO_NEW_PRIVS, prctl, syscall

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3 and 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a rule on a file may carry
READ_ONLY = READ_FILE | READ_DIR  # no EXECUTE anywhere: execve of any file fails (EACCES)
READ_WRITE = (READ_FILE | READ_DIR | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK
              | MAKE_FIFO | MAKE_SYM | REFER | TRUNCATE)


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        return syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except OSError:
        return 0


def handled_fs(abi: int) -> int:
    """Every filesystem right this ABI version can restrict."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(read_only: list[str], read_write: list[str]) -> int:
    """Confine this process (and its future children) to the given paths; returns the ABI used.

    Paths that do not exist are skipped. No path may be executed (shared libraries still load: dlopen
    maps files opened for reading). TCP bind/connect are denied (ABI >= 4); signals and abstract
    unix sockets are scoped to the sandbox (ABI >= 6).
    """
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    handled = handled_fs(abi)
    attr = RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                       SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = syscall(SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    try:
        for paths, rights in ((read_only, READ_ONLY), (read_write, READ_WRITE)):
            for path in paths:
                add_path_rule(ruleset, path, rights & handled)
        syscall(SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return abi


def add_path_rule(ruleset: int, path: str, rights: int) -> None:
    """Allow `rights` beneath `path` (a file gets only the file rights among them)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = PathBeneathAttr(rights, fd)
        syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)
