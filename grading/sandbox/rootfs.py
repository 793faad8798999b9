"""The fork server's private filesystem: a minimal read-only root, and each run's scratch tmpfs.

enter_minimal_root() runs once, as root, in the server: a private mount namespace whose root is a
tmpfs holding only read-only binds of /usr (and the /lib, /bin links), the Python installation at its
real path (even under /root, which the sandbox uid could not traverse), ld.so.cache, a few devices,
optional extra paths (the bwrap binary), and the empty mount point SCRATCH. Host files (the project
tree, /root, /home, /etc, /tmp, /proc, /sys) are simply not there. mount_scratch() runs per run, in
the run's own mount namespace: a size-capped tmpfs that vanishes with the run.
"""

from __future__ import annotations

import os

from grading.sandbox import linux

SCRATCH = "/sandbox"
SYSTEM_PATHS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
SYSTEM_FILES = ("/etc/ld.so.cache",)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
# Where the new root is assembled inside the private namespace (the host's folder itself is untouched): the
# first of these that holds none of the paths to bind, since the tmpfs mounted on it hides what is beneath.
STAGING_CANDIDATES = ("/tmp", "/mnt", "/media", "/srv", "/opt")


def enter_minimal_root(bind_paths: list[str], with_proc: bool = False) -> None:
    """Make this (already unshared) mount namespace private and root it at a minimal read-only tree.

    with_proc mounts /proc too (bwrap needs it to set up its user namespace).
    """
    staging = staging_point(bind_paths)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("tmpfs", staging, "tmpfs", linux.MS_NOSUID, "mode=0755,size=1m")
    for path in SYSTEM_PATHS:
        replicate(path, staging)
    for path in [*SYSTEM_FILES, *DEVICES, *bind_paths]:
        if os.path.exists(path) and not os.path.exists(staging + path):
            bind_read_only(path, staging, writable=path == "/dev/null")
    if with_proc:
        os.mkdir(staging + "/proc", 0o555)
        linux.mount("proc", staging + "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    os.mkdir(staging + SCRATCH, 0o755)
    if not os.path.lexists(staging + "/tmp"):  # else a bound path (a checkout's bwrap) lives under /tmp
        os.symlink(SCRATCH, staging + "/tmp")  # programs that write to /tmp land in their scratch
    os.symlink(SCRATCH, staging + "/dev/shm")  # and so do POSIX semaphores (multiprocessing)
    os.chdir(staging)
    linux.pivot_root(".", ".")  # the old root is stacked under the new one ...
    linux.umount(".", linux.MNT_DETACH)  # ... and detached
    os.chdir("/")
    linux.mount(None, "/", None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID)


def staging_point(bind_paths: list[str]) -> str:
    """An existing folder that contains none of `bind_paths` (a project checked out under /tmp, say)."""
    for candidate in STAGING_CANDIDATES:
        inside = [path for path in bind_paths
                  if os.path.realpath(path) == candidate or os.path.realpath(path).startswith(candidate + "/")]
        if os.path.isdir(candidate) and not os.path.islink(candidate) and not inside:
            return candidate
    raise RuntimeError(f"no folder to build the sandbox root in: each of {STAGING_CANDIDATES} is missing or holds "
                       f"one of {bind_paths}")


def replicate(path: str, staging: str) -> None:
    """Copy a symlink (merged /usr: /lib -> usr/lib) or bind a directory read-only."""
    if os.path.islink(path):
        os.symlink(os.readlink(path), staging + path)
    elif os.path.isdir(path):
        bind_read_only(path, staging)


def bind_read_only(path: str, staging: str, writable: bool = False) -> None:
    """Bind host `path` at the same path in the new root (parents created on the tmpfs)."""
    target = staging + path
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    if os.path.isdir(path):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        open(target, "w").close()
    linux.mount(path, target, None, linux.MS_BIND | linux.MS_REC)
    flags = linux.MS_REMOUNT | linux.MS_BIND | linux.MS_NOSUID | (0 if writable else linux.MS_RDONLY)
    linux.mount(None, target, None, flags)


def mount_scratch(size_bytes: int, uid: int, gid: int) -> None:
    """A fresh tmpfs on SCRATCH owned by the sandbox user; call in the run's own mount namespace."""
    options = f"size={size_bytes},mode=0700,uid={uid},gid={gid},nr_inodes=4096"
    linux.mount("tmpfs", SCRATCH, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC, options)
