"""The seccomp filters of sandboxed programs: compiled once to BPF bytes (libseccomp via pyseccomp).

The base filter is loaded by the fork server's children (prctl) and handed to bwrap (--seccomp FD), which
must still exec the interpreter after loading it. The exec filter (execve and execveat answer EPERM) is
loaded on top by the harness itself once the interpreter runs, on both backends: from then on no process
of the run can start another program.

The base filter allows by default. Denied with EPERM: namespaces, mounts, ptrace, kernel keyrings, BPF,
io_uring (it could open sockets behind the filter's back), modules, clocks and the like. socket() is
refused with EACCES for every family but AF_UNIX; clone3 answers ENOSYS so that libc falls back to
clone(), whose flags the filter can read. Other architectures' syscall tables (int 0x80, x32) kill the
process.
"""

from __future__ import annotations

import errno
import os
import socket

from grading.sandbox import linux

DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "vhangup", "iopl", "ioperm",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "lookup_dcookie", "uselib",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "mknod", "mknodat", "personality",
)
EXEC_SYSCALLS = ("execve", "execveat")
NAMESPACE_FLAGS = (linux.CLONE_NEWNS, linux.CLONE_NEWUTS, linux.CLONE_NEWIPC, linux.CLONE_NEWUSER,
                   linux.CLONE_NEWPID, linux.CLONE_NEWNET, 0x02000000, 0x00000080)  # + NEWCGROUP, NEWTIME
TIOCSTI = 0x5412  # push characters into a terminal's input


def build_filter():
    """The filter as a pyseccomp SyscallFilter (raises ImportError/RuntimeError without libseccomp)."""
    import pyseccomp as seccomp

    denied = seccomp.ERRNO(errno.EPERM)
    syscall_filter = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            syscall_filter.add_rule(denied, name)
        except (OSError, ValueError):
            continue  # a syscall this libseccomp or architecture does not know
    for flag in NAMESPACE_FLAGS:
        syscall_filter.add_rule(denied, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    syscall_filter.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    syscall_filter.add_rule(seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    syscall_filter.add_rule(denied, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    return syscall_filter


def build_exec_filter():
    """A filter refusing execve and execveat with EPERM (and allowing everything else)."""
    import pyseccomp as seccomp

    syscall_filter = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in EXEC_SYSCALLS:
        syscall_filter.add_rule(seccomp.ERRNO(errno.EPERM), name)
    return syscall_filter


def compile_bpf(syscall_filter=None) -> bytes:
    """A filter (default: the base filter) as raw BPF instructions (struct sock_filter[]), as bwrap's
    --seccomp and linux.load_seccomp() expect."""
    memfd = os.memfd_create("seccomp-bpf")
    try:
        with os.fdopen(os.dup(memfd), "wb") as writer:
            (syscall_filter or build_filter()).export_bpf(writer)
        os.lseek(memfd, 0, os.SEEK_SET)
        size = os.fstat(memfd).st_size
        return os.read(memfd, size)
    finally:
        os.close(memfd)
