"""A functional test in two processes, so that its verdict never depends on the solution's cooperation.

The harness (no solution code has run in it yet) makes itself non-dumpable and forks before it reads
the check's source (CHECK_FD):
- the solution process closes CHECK_FD unread, runs the solution in a fresh module, and then serves
  calls: it evaluates the entry point and answers each call with the return value or the exception;
- the checker process (the harness itself, the run's main process) compiles and runs the check in a
  namespace of its own. `candidate` is a RemoteFunction proxy: the arguments go over as plain data, and the
  answer comes back decoded into plain builtin values (wire.py), which the check compares itself. Nothing
  else comes from the solution: a helper the check calls (HumanEval's poly, encode_cyclic) is the check's own
  (grading.programs.code_task runs a stub prompt in front of it), or the check fails; a helper taken from
  the solution could be redefined to agree with a wrong answer.
The verdict is the checker's exit status: 0 only when check(candidate) returned. Nothing the solution
can reach decides it: it never holds the check (so no expected output, no token), shares no memory,
builtins or modules with the checker, cannot read or trace it (non-dumpable, no /proc/<pid>/mem; ptrace
and process_vm_* are denied by seccomp), cannot start programs, and whatever it prints is only output.
When the solution process ends (or breaks the protocol) before the check is done, the checker ends
the same way, never with status 0: a signal is raised again, so a CPU-limit kill stays time_limit.
"""

import builtins
import os
import signal

from grading.sandbox import linux, running, wire

CHECK_FILE = "<check>"
TRACEBACK_CHARACTERS = 2000
MALFORMED = (ValueError, TypeError, IndexError, OverflowError, RecursionError)  # what bad data raises here
EVALUATE = builtins.eval  # bound before any solution runs: one that replaces builtins.eval still gets its candidate


class SolutionEnded(BaseException):
    """The solution process is gone or sent garbage: the check cannot go on (not an Exception, so a
    check's `except Exception` cannot swallow it)."""


class SolutionError(Exception):
    """An exception of a type the checker does not have (the solution's own classes)."""


def run(program, check_fd):
    """The functional run: fork the solution process, run the check here; the checker's exit status."""
    linux.prctl(linux.PR_SET_DUMPABLE, 0)  # inherited: neither process can be read through /proc
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    solution = os.fork()
    if solution == 0:
        for fd in (check_fd, requests_write, replies_read):
            os.close(fd)
        running.end(running.status_of(lambda: serve_solution(program, requests_read, replies_write)))
    for fd in (requests_read, replies_write):
        os.close(fd)
    channel = Channel(requests_write, replies_read)
    status = check_status(channel, read_check(check_fd), program["entry_point"])
    return ended_like(solution, channel.broken) if channel.broken else status


def read_check(check_fd):
    with os.fdopen(check_fd, "r", encoding="utf-8") as check:
        return check.read()


# The solution's side.

def serve_solution(program, requests, replies):
    """Run the solution, then answer the checker's requests until it is done."""
    namespace = running.main_module("solution").__dict__
    running.execute(program["code"], running.SOLUTION_FILE, namespace)
    server = SolutionServer(namespace, program["entry_point"])
    while True:
        try:
            request = wire.receive(requests)
        except EOFError:
            return 0  # the check is over
        wire.send(replies, server.answer(request))


class SolutionServer:
    """The solution's namespace and the callables it has handed to the checker (by index)."""

    def __init__(self, namespace, entry_point):
        self.namespace, self.entry_point = namespace, entry_point
        self.callables = []

    def register(self, function):
        self.callables.append(function)
        return len(self.callables) - 1

    def answer(self, request):
        """["ok", value] or ["raise", type name, message, traceback] for one request of the checker."""
        try:
            if request[0] == "begin":  # the candidate, nothing else of the solution's
                value = {"candidate": EVALUATE(self.entry_point, self.namespace)}
            else:  # ["call", index, arguments, keyword arguments]
                value = self.callables[request[1]](*wire.decode(request[2]), **wire.decode(request[3]))
            return ["ok", wire.encode(value, self.register)]
        except Exception as error:
            return ["raise", type(error).__name__, describe(error), solution_traceback()]


def describe(error):
    try:
        return str(error)
    except Exception:
        return "<unprintable message>"


def solution_traceback():
    import traceback

    return traceback.format_exc()[-TRACEBACK_CHARACTERS:]


# The checker's side.

class Channel:
    """The checker's end of the pipes to the solution process."""

    def __init__(self, requests, replies):
        self.requests, self.replies = requests, replies
        self.broken = ""  # why the solution can no longer answer

    def ask(self, request):
        """Send a request; the decoded value, or the solution's exception raised here."""
        reply = self.exchange(request)
        if isinstance(reply, list) and len(reply) == 4 and reply[0] == "raise":
            raise rebuilt_exception(*reply[1:])
        if isinstance(reply, list) and len(reply) == 2 and reply[0] == "ok":
            try:
                return wire.decode(reply[1], lambda index, name: RemoteFunction(self, index, name))
            except MALFORMED:
                pass
        self.end("the solution process sent a malformed reply")

    def exchange(self, request):
        """Write the request, read the reply (None when it is not JSON)."""
        if self.broken:
            raise SolutionEnded(self.broken)
        try:
            wire.send(self.requests, request)
            return wire.receive(self.replies)
        except (OSError, EOFError):
            self.end("the solution process ended before the check was done")
        except MALFORMED:
            return None

    def end(self, reason):
        self.broken = reason
        raise SolutionEnded(reason)


class RemoteFunction:
    """A callable of the solution process."""

    def __init__(self, channel, index, name):
        self.channel, self.index, self.__name__ = channel, index, name

    def __call__(self, *arguments, **keywords):
        return self.channel.ask(["call", self.index, wire.encode(list(arguments)), wire.encode(keywords)])

    def __repr__(self):
        return f"<the solution's {self.__name__}>"


def rebuilt_exception(type_name, message, traceback_text):
    """The solution's exception as one of the checker's own: a builtin type of that name, else SolutionError."""
    kind = getattr(builtins, str(type_name), None)
    error = SolutionError(f"{type_name}: {message}")
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            error = kind(str(message))
        except TypeError:
            pass  # a type whose constructor wants other arguments: SolutionError stands in
    error.add_note("raised in the solution:\n" + str(traceback_text))
    return error


def check_status(channel, source, entry_point):
    """Run the check: 0 when check(candidate) returned, CHECK_FAILED on AssertionError, else a failure."""
    try:
        run_check(channel, source, entry_point)
        return 0
    except AssertionError:
        running.print_traceback()
        return running.CHECK_FAILED
    except SolutionEnded:
        return 1  # ended_like() decides
    except MemoryError:
        os.write(2, b"MemoryError: the program exceeded its memory limit\n")
        return running.MEMORY_ERROR
    except BaseException:  # SystemExit included: only a returning check passes
        running.print_traceback()
        return 1


def run_check(channel, source, entry_point):
    """Compile and run the check's code, then check(candidate), in a namespace the solution never sees; a check
    that calls the entry point by name (MBPP's `assert add(1, 2) == 3`) calls the candidate."""
    import linecache

    linecache.cache[CHECK_FILE] = (len(source), None, source.splitlines(True), CHECK_FILE)
    code = compile(source, CHECK_FILE, "exec")
    begun = channel.ask(["begin"])
    if not (isinstance(begun, dict) and "candidate" in begun):
        channel.end("the solution process sent a malformed reply")
    namespace = {"__name__": "check", "__builtins__": builtins}  # the check defines (or imports) all else it uses
    if isinstance(entry_point, str) and entry_point.isidentifier():
        namespace[entry_point] = begun["candidate"]  # the check's own definitions still override it
    exec(code, namespace)
    namespace["check"](begun["candidate"])


def ended_like(solution, reason):
    """The checker's status once the solution process is gone: its exit status or signal, never 0."""
    try:
        os.kill(solution, signal.SIGKILL)  # it may still run after closing its pipes
    except ProcessLookupError:
        pass
    _, status = os.waitpid(solution, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)  # ends here: a signal that killed the solution kills by default
    if code > 0:
        return code
    os.write(2, f"{reason} (exit status {code})\n".encode())
    return 1
