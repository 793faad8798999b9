"""Inside the sandbox: run untrusted code in this interpreter and turn how it ended into an exit status.

Standard library only (bwrap.py loads it from source). Exit statuses: 0 ran to completion; 1 an
exception (traceback on stderr); SystemExit's own status; CHECK_FAILED a functional check raised
AssertionError; MEMORY_ERROR an uncaught MemoryError.
"""

import builtins
import os
import sys
import types

CHECK_FAILED = 101
MEMORY_ERROR = 102
SOLUTION_FILE = "<solution>"
SANDBOX_PACKAGE = "grading.sandbox."


def main_module(name="__main__"):
    """A fresh __main__ module for the solution, as a new interpreter would have."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    sys.argv = [SOLUTION_FILE]
    module.__name__ = name  # "solution" keeps `if __name__ == "__main__":` blocks from running
    return module


def execute(source, filename, namespace):
    """Compile and exec source; its lines are registered so tracebacks can show them."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)


def status_of(action):
    """Call action() -> status (None means 0); an exception it raises becomes the exit status."""
    try:
        return action() or 0
    except SystemExit as error:
        return exit_status(error)
    except MemoryError:
        os.write(2, b"MemoryError: the program exceeded its memory limit\n")
        return MEMORY_ERROR
    except BaseException:  # the program's own failure, reported as a runtime error
        print_traceback()
        return 1


def exit_status(error):
    """The status a plain interpreter gives for SystemExit(code)."""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code & 0xFF
    print(error.code, file=sys.stderr)
    return 1


def print_traceback():
    """The current exception's traceback without the sandbox's own frames."""
    import traceback

    error = sys.exc_info()[1]
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_globals.get("__name__", "").startswith(SANDBOX_PACKAGE):
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)


def interpreter_exit(status):
    """What a plain interpreter does between its main module and its exit: wait for the non-daemon threads the
    program started (the deep-recursion idiom runs main() in one and never joins it), then run the atexit
    handlers it registered; an error in either is printed and the main module's status kept. The wall-clock
    limit bounds both, as it bounds the program."""
    import atexit

    threading = sys.modules.get("threading")
    if threading is not None:
        status_of(threading._shutdown)
    status_of(atexit._run_exitfuncs)
    return status


def end(status):
    """Flush stdio and exit at once, without the program's cleanup handlers."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except ValueError:
            continue  # closed by the program itself, as a plain interpreter tolerates
        except (OSError, AttributeError):  # a write error, or a stream the program replaced by junk
            status = status or 1
    os._exit(status)
