"""Runs inside the sandbox: read the program, lower the limits, deny exec, signal readiness, run it.

Standard library and the sandbox's own stdlib-only modules (linux, running, wire, functional): bwrap.py
loads them from source for `python -I -S -c`, the fork server calls main() in its child. File
descriptors: 0/1/2 the run's stdio; PROGRAM_FD a JSON document {"mode", "code", "entry_point",
"rlimits", "environment", "exec_filter"}; READY_FD a pipe the judge watches: one byte there means the
sandbox is set up and the program's clock starts; CHECK_FD a functional test's check code, which only
the checker process reads (functional.py). Exit status: see running.py; a functional run exits 0
only when its check passed.
"""

import atexit
import builtins
import errno
import io
import json
import os
import posix
import resource
import signal
import sys

from grading.sandbox import functional, linux, running

PROGRAM_FD = 3
READY_FD = 4
CHECK_FD = 5
SPAWN_FUNCTIONS = ("system", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
                   "spawnvpe")


def read_program(fd):
    """The program document; the descriptor is closed so the solution cannot reread it."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def lower_limits(rlimits):
    """setrlimit each [resource, soft, hard], never above the hard limit already in force."""
    for number, soft, hard in rlimits:
        current_hard = resource.getrlimit(number)[1]
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
        resource.setrlimit(number, (min(soft, hard), hard))


def fresh_stdio():
    """New text streams on fds 0/1/2 (a forked child must not reuse the server's buffers)."""
    sys.stdin = sys.__stdin__ = io.open(0, "r", encoding="utf-8", closefd=False)
    sys.stdout = sys.__stdout__ = io.open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = io.open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace",
                                          closefd=False)


def add_quitters():
    """exit() and quit(), which `python -S` (bwrap) leaves undefined, as site.py defines them."""
    if not hasattr(builtins, "exit"):
        import _sitebuiltins

        builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
        builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")


def deny_exec(exec_filter):
    """Load the exec filter (hex BPF; "" when seccomp is off), and make os.system and os.spawn*, which
    would otherwise only return 127, raise PermissionError like every other way of starting a program."""
    if exec_filter:
        linux.load_seccomp(bytes.fromhex(exec_filter))
    for name in SPAWN_FUNCTIONS:
        setattr(os, name, refuse_program_start)
    posix.system = refuse_program_start


def refuse_program_start(*arguments, **keywords):
    raise PermissionError(errno.EPERM, "starting other programs is not allowed in the sandbox")


def become_reaper_of_the_run():
    """Fork; the child returns to run the program, and this process stays as the run's reaper: a child subreaper
    (every orphan of the run comes back to it) that waits for the program, then kills whatever the run left
    (kill(-1): every process of the PID namespace but init and itself) and reaps it all, so that each process's
    CPU time adds up in the run's total (init's wait gathers it), and exits with the program's status (128 + N
    for signal N, as an init reports it). Without it, children the program never waited for died with the
    namespace uncounted, and work split over them escaped the CPU limit. A program that kills its reaper ends
    as killed, never as passed."""
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    program = os.fork()
    if program == 0:
        return
    linux.prctl(linux.PR_SET_DUMPABLE, 0)  # its exit status is the verdict's: not readable or traceable
    os.closerange(0, CHECK_FD + 1)  # only the program holds the run's pipes (and the judge's end-of-output)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while True:  # orphans of the run are reaped on the way
        pid, status = os.wait()
        if pid == program:
            break
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass  # nothing left
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def main(program_fd=PROGRAM_FD, ready_fd=READY_FD, check_fd=CHECK_FD):
    """Entry point inside the sandbox; never returns."""
    become_reaper_of_the_run()
    program = read_program(program_fd)
    lower_limits(program["rlimits"])
    fresh_stdio()
    if "random" in sys.modules:
        sys.modules["random"].seed()  # a forked child would otherwise repeat the server's sequence
    os.environ.clear()
    os.environ.update(program["environment"])
    add_quitters()
    deny_exec(program["exec_filter"])
    os.write(ready_fd, b"R")
    os.close(ready_fd)
    if program["mode"] == "functional":
        running.end(functional.run(program, check_fd))
    os.close(check_fd)
    atexit._clear()  # the sandbox's own handlers, inherited: only the program's run at its exit
    module = running.main_module()
    status = running.status_of(lambda: running.execute(program["code"], running.SOLUTION_FILE, module.__dict__))
    running.end(running.interpreter_exit(status))
