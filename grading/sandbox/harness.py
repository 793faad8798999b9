"""Runs inside the sandbox: read the program, lower the limits, signal readiness, run the solution.

Standard library only and no package imports: bwrap runs this file's source with `python -I -S -c`,
the fork server calls main() in its child. File descriptors: 0/1/2 the run's stdio, PROGRAM_FD a
JSON document {"mode", "code", "check", "entry_point", "nonce", "rlimits"}, READY_FD a pipe the
judge watches: one byte there means the sandbox is set up and the program's clock starts.

Exit status: 0 ran to completion (functional: check passed, and the last stdout line is the nonce,
which the solution cannot know in advance); 1 an exception (traceback on stderr); CHECK_FAILED
check(candidate) raised AssertionError; MEMORY_ERROR an uncaught MemoryError.
"""

import builtins
import io
import json
import os
import resource
import sys
import types

PROGRAM_FD = 3
READY_FD = 4
CHECK_FAILED = 101
MEMORY_ERROR = 102
SOLUTION_FILE = "<solution>"
CHECK_FILE = "<check>"


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


def main_module():
    """A fresh __main__ module for the solution, as a new interpreter would have."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    sys.argv = [SOLUTION_FILE]
    return module


def execute(source, filename, namespace):
    """Compile and exec source; its lines are registered so tracebacks can show them."""
    import linecache

    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    exec(compile(source, filename, "exec"), namespace)


def run_stdin_program(program):
    """The solution as a script reading stdin; its exit status follows sys.exit()."""
    execute(program["code"], SOLUTION_FILE, main_module().__dict__)


def run_functional_program(program):
    """Solution, then the check code, then check(<entry_point>) in the same namespace."""
    module = main_module()
    module.__name__ = "solution"  # keeps `if __name__ == "__main__":` blocks from running
    namespace = module.__dict__
    try:
        execute(program["code"], SOLUTION_FILE, namespace)
    except SystemExit:
        raise RuntimeError("the solution exited before the check ran")
    execute(program["check"], CHECK_FILE, namespace)
    candidate = eval(program["entry_point"], namespace)
    try:
        namespace["check"](candidate)
    except AssertionError:
        print_traceback()
        return CHECK_FAILED
    except SystemExit:
        raise RuntimeError("the solution exited during the check")
    return 0


def print_traceback():
    """The current exception's traceback without the harness's own frames."""
    import traceback

    error = sys.exc_info()[1]
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_globals is globals():
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)


def exit_status(error):
    """The status a plain interpreter gives for SystemExit(code)."""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code & 0xFF
    print(error.code, file=sys.stderr)
    return 1


def run(program):
    """Run the program; returns the exit status (see the module docstring)."""
    try:
        if program["mode"] == "functional":
            return run_functional_program(program)
        run_stdin_program(program)
        return 0
    except SystemExit as error:
        return exit_status(error)
    except MemoryError:
        os.write(2, b"MemoryError: the program exceeded its memory limit\n")
        return MEMORY_ERROR
    except BaseException:  # the solution's own failure, reported as a runtime error
        print_traceback()
        return 1


def finish(program, status):
    """Flush stdio, append the nonce line after a passed check, and exit without cleanup handlers."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except ValueError:
            continue  # closed by the program itself, as a plain interpreter tolerates
        except (OSError, AttributeError):  # a write error, or a stream the program replaced by junk
            status = status or 1
    if program["mode"] == "functional" and status == 0:
        try:
            os.write(1, ("\n" + program["nonce"] + "\n").encode())
        except OSError:
            status = 1
    os._exit(status)


def main(program_fd=PROGRAM_FD, ready_fd=READY_FD):
    """Entry point inside the sandbox; never returns."""
    program = read_program(program_fd)
    lower_limits(program["rlimits"])
    fresh_stdio()
    if "random" in sys.modules:
        sys.modules["random"].seed()  # a forked child would otherwise repeat the server's sequence
    os.environ.clear()
    os.environ.update(program["environment"])
    os.write(ready_fd, b"R")
    os.close(ready_fd)
    finish(program, run(program))


if __name__ == "__main__":
    main()
