"""Sandbox uids: one per worker, leased with a lock file so concurrent judges never share one.

RLIMIT_NPROC counts the processes of a real uid across the whole host, and killing "everything of
uid U" is the last line of cleanup, so a uid must belong to exactly one worker at a time.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

LOCK_DIRECTORY = Path(tempfile.gettempdir()) / "mirrorlab-sandbox-uids"
SWEEP_SECONDS = 10.0


class UidLease:
    """Holds the lock of one uid of [first, first + count) until release()."""

    def __init__(self, first: int, count: int):
        LOCK_DIRECTORY.mkdir(mode=0o700, exist_ok=True)
        for uid in range(first, first + count):
            fd = os.open(LOCK_DIRECTORY / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError(f"all sandbox uids {first}..{first + count - 1} are in use by other judges; "
                           f"close some or widen uid_count")

    def release(self) -> None:
        os.close(self._fd)


def processes_of(uid: int) -> list[int]:
    """Pids whose real uid is `uid` (from /proc/<pid>/status: /proc/<pid> itself may be owned by root)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(entry))
                        break
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile
    return pids


def kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid` and wait until none is left (raises if some survive).

    kill(-1) issued *as* that uid reaches all of its processes at once, in every PID namespace below
    ours, even ones forking as fast as they can; a few rounds catch processes born meanwhile.
    """
    deadline = time.monotonic() + SWEEP_SECONDS
    while processes_of(uid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of sandbox uid {uid} survived SIGKILL: {processes_of(uid)}")
        subprocess.run(["/bin/kill", "-KILL", "-1"], user=uid, group=uid, extra_groups=[],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
        time.sleep(0.01)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
