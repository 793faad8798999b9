"""The fork server: one warm root process per worker, forking a fresh sandboxed child for every run.

Started by ServerProcess (worker.py) as `python -c ...` with a JSON config (including the compiled
seccomp program) and one end of a SOCK_SEQPACKET socket pair. At start-up it imports everything it will
need and moves itself into a private network namespace (no interfaces up) and a private mount namespace
rooted at a minimal read-only tree (rootfs.py). Then, per run:

- judge -> server: b"run" with 6 descriptors (stdin, stdout, stderr, program, ready pipe, check);
- the server forks the child (mode "inprocess": as pid 1 of a new PID namespace; mode "bwrap": to exec
  bwrap as the sandbox uid), and waits for it, for b"kill" from the judge, for the judge's socket to
  close, or for the backstop timeout, killing the child on the last three;
- server -> judge: {"status": wait status, "cpu": seconds, "leftovers": bool}. In "inprocess" mode the
  child is its PID namespace's init, so once it is reaped every process of the run is gone; in "bwrap"
  mode the server, a child subreaper, also reaps the orphaned sandbox init before replying, and counts
  its CPU time (which holds the program's: bwrap's outer process never waits for it).

The "inprocess" child: new mount and IPC namespaces, scratch tmpfs, drop to the worker's uid, Landlock,
seccomp; it then forks the program (pid 2, where harness.main() sets the rlimits, denies exec and runs
the solution in this already-warm interpreter) and stays as its namespace's init.
Protections the config switches off (a lowered minimum on a host without them) are skipped.
"""

from __future__ import annotations

import base64
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import time
import traceback

from grading.sandbox import harness, landlock, linux, rootfs

RUN_DESCRIPTORS = 6  # stdin, stdout, stderr, program, ready, check
SETUP_FAILED = 125  # exit status of a child whose sandbox could not be set up
SECCOMP_FD = 6  # where a bwrap child finds the BPF program
REAP_SECONDS = 5.0


def main(config_json: str, control_fd: int) -> None:
    """Entry point of the server process."""
    config = json.loads(config_json)
    control = socket.socket(fileno=control_fd)
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)  # orphans of a run come back to the server to be reaped
    bpf = base64.b64decode(config["seccomp_bpf"]) if config["seccomp"] else None
    own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    cgroup_fds = [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for path in config["cgroup_procs"]]
    linux.unshare(linux.CLONE_NEWNS | (linux.CLONE_NEWNET if config["net_namespace"] else 0))
    rootfs.enter_minimal_root(config["bind_paths"], with_proc=config["mode"] == "bwrap")
    gc.freeze()  # children never scan (and so never copy) the server's objects
    control.send(b"ready")
    while True:
        message, fds, _, _ = socket.recv_fds(control, 64, RUN_DESCRIPTORS)
        if not message:
            return  # the judge closed the socket
        if message == b"run" and len(fds) == RUN_DESCRIPTORS:
            status, cpu, reaped = serve_run(control, config, fds, bpf, own_pid_namespace, cgroup_fds)
            control.send(json.dumps({"status": status, "cpu": cpu, "leftovers": not reaped}).encode())
        else:
            for fd in fds:
                os.close(fd)  # a stray b"kill" after its run ended, or garbage


def serve_run(control: socket.socket, config: dict, fds: list[int], bpf: bytes, own_pid_namespace: int,
              cgroup_fds: list[int]):
    """Fork the run's child, wait for it (killing it when told or at the backstop); (status, cpu, reaped)."""
    try:
        pid = spawn(config, lambda: child(config, fds, bpf, cgroup_fds), own_pid_namespace)
    finally:
        for fd in fds:
            os.close(fd)
    if not wait_or_kill(control, pid, config["backstop_seconds"]):
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    reaped, orphans_cpu = reap_orphans()
    return status, usage.ru_utime + usage.ru_stime + orphans_cpu, reaped


def reap_orphans() -> tuple[bool, float]:
    """Wait for every descendant the server adopted (it is a subreaper); (all reaped within
    REAP_SECONDS, their CPU seconds).

    bwrap's outer process exits before its sandbox's init is reaped; that init is then orphaned to the
    server and dies a moment later (--die-with-parent), with the CPU time of the program it reaped.
    """
    cpu = 0.0
    deadline = time.monotonic() + REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return True, cpu  # no child left
        if pid == 0:
            time.sleep(0.001)
        else:
            cpu += usage.ru_utime + usage.ru_stime
    return False, cpu


def spawn(config: dict, run_child, own_pid_namespace: int) -> int:
    """Fork run_child(); in "inprocess" mode the child is born as pid 1 of a fresh PID namespace."""
    inprocess = config["mode"] == "inprocess"
    if inprocess:
        linux.unshare(linux.CLONE_NEWPID)  # moves only the children forked from now on; undone below
    try:
        pid = os.fork()
        if pid == 0:
            run_child()  # never returns
    finally:
        if inprocess:
            linux.setns(own_pid_namespace, linux.CLONE_NEWPID)
    return pid


def wait_or_kill(control: socket.socket, pid: int, backstop_seconds: float) -> bool:
    """Wait for the child to exit (True) or for a reason to kill it (False)."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([pidfd, control], [], [], backstop_seconds)
            if pidfd in ready:
                return True
            if not ready:
                return False  # the judge should have killed it long ago
            message = control.recv(64)
            if message in (b"kill", b""):
                if not message:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    os._exit(0)  # the judge is gone: end with its run
                return False
    finally:
        os.close(pidfd)


def child(config: dict, fds: list[int], bpf: bytes, cgroup_fds: list[int]) -> None:
    """The forked child: set the sandbox up, then run the harness or exec bwrap. Never returns."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        for cgroup_fd in cgroup_fds:
            os.write(cgroup_fd, b"0")  # join the worker's cgroup ("0" = the writing process)
        bwrap = config["mode"] == "bwrap"
        install_descriptors(fds, bpf if bwrap else None)
        os.setsid()
        if bwrap:
            linux.drop_to_user(config["uid"], config["gid"])
            os.execve(config["bwrap_argv"][0], config["bwrap_argv"], {})
        confine(config, bpf)
        program = os.fork()
        if program == 0:
            harness.main()  # exits by itself once the program has started
        act_as_init(program)
    except BaseException:
        os.write(2, ("sandbox setup failed: " + traceback.format_exc()).encode())
    finally:
        os._exit(SETUP_FAILED)


def act_as_init(program: int) -> None:
    """Pid 1 of the run: reap every orphan, and when the program ends exit with its status (128 + N if
    signal N killed it, as shells and bwrap report it), which ends every process left in the namespace.

    The program must not be pid 1 itself: the kernel shields a namespace's init from signals it does
    not handle, SIGXCPU (the CPU limit) and a program's signals to itself included.
    """
    os.closerange(0, RUN_DESCRIPTORS)  # only the program holds the run's pipes
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no KeyboardInterrupt: an init ignores what it does not handle
    while True:
        pid, status = os.wait()
        if pid == program:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def install_descriptors(fds: list[int], bpf: bytes | None) -> None:
    """Put the run's descriptors at 0..5 (and the BPF program at 6 for bwrap); close everything else."""
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in fds]  # out of the way of 0..6
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    if bpf is not None:
        memfd = os.memfd_create("seccomp")
        os.write(memfd, bpf)
        os.lseek(memfd, 0, os.SEEK_SET)
        os.dup2(memfd, SECCOMP_FD)
    os.closerange(RUN_DESCRIPTORS + (bpf is not None), 1 << 20)


def confine(config: dict, bpf: bytes | None) -> None:
    """Namespaces, scratch, uid, Landlock and seccomp for an "inprocess" child (pid 1 of its namespace)."""
    linux.unshare(linux.CLONE_NEWNS | (linux.CLONE_NEWIPC if config["ipc_namespace"] else 0))
    rootfs.mount_scratch(config["scratch_bytes"], config["uid"], config["gid"])
    os.chdir(rootfs.SCRATCH)
    os.umask(0o077)
    linux.drop_to_user(config["uid"], config["gid"])
    sys.path[:] = config["stdlib_path"]
    sys.executable = config["python"]
    if config["landlock"]:
        landlock.restrict(read_only=config["readable_paths"], read_write=[rootfs.SCRATCH, "/dev/null"])
    if bpf is not None:
        linux.load_seccomp(bpf)
