"""Attacks on the sandbox and on the functional-test verdict, each on both backends.

No program may start another one, however it asks; no trick of a wrong functional solution (reading the
call stack, replacing builtins, planting modules, stopping its checker) gets it accepted; and the bwrap
fixes hold: exit()/quit() work, a CPU-limit kill is time_limit, only the scratch is writable, and
closing the judge mid-run says so. Needs root, like tests/grading/test_sandbox.py.
"""

from __future__ import annotations

import threading
import time

import pytest

from grading.sandbox import (ACCEPTED, RUNTIME_ERROR, TIME_LIMIT, WRONG_ANSWER, CodeJudge, SandboxClosed,
                             SandboxLimits)
from tests.grading.sandbox_support import BACKENDS, skip_reason
from tests.grading.test_sandbox import CLOSE_ELEMENTS, CLOSE_ELEMENTS_TESTS, assert_nothing_left, program

WRONG_CLOSE_ELEMENTS = "def has_close_elements(numbers, threshold):\n    return True\n"
# The marker is built at run time, so that only a program that really ran prints it.
ECHO = "['/bin/echo', 'pw' + 'ned']"
EXEC_ROUTES = {
    "os.system": "import os\nos.system('echo pw''ned')",
    "posix.system": "import posix\nposix.system('echo pw''ned')",
    "obfuscated system": "getattr(__import__('o' + 's'), 'sys' + 'tem')('echo pw''ned')",
    "os.popen": "import os\nprint(os.popen('echo pw''ned').read())",
    "subprocess.run": f"import subprocess\nsubprocess.run({ECHO})",
    "subprocess shell": "import subprocess\nsubprocess.run('echo pw''ned', shell=True, check=True)",
    "os.posix_spawn": f"import os\nos.posix_spawn('/bin/echo', {ECHO}, {{}})",
    "os.spawnv": f"import os\nos.spawnv(os.P_WAIT, '/bin/echo', {ECHO})",
    "os.execv": f"import os\nos.execv('/bin/echo', {ECHO})",
    "os.execve via getattr": f"import os\ngetattr(os, 'exec' + 've')('/bin/echo', {ECHO}, {{}})",
    "fexecve of a memfd": program(f"""
        import os
        memfd = os.memfd_create("copy")
        os.write(memfd, open("/bin/echo", "rb").read())
        os.execve(memfd, {ECHO}, {{}})
    """),
    "libc system": program("""
        import ctypes
        status = ctypes.CDLL(None).system(b"echo pw''ned")
        assert status == 0, f"system() returned {status}"
    """),
    "libc execve": program("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        argv = (ctypes.c_char_p * 3)(b"/bin/echo", b"pw" + b"ned", None)
        libc.execve(b"/bin/echo", argv, (ctypes.c_char_p * 1)(None))
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    """),
    "exec in a forked child": program(f"""
        import os
        pid = os.fork()
        if pid == 0:
            try:
                os.execv('/bin/echo', {ECHO})
            except PermissionError:
                os._exit(1)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if status:
            raise PermissionError(f"the child could not exec (status {{status}})")
    """),
    "exec in a thread": program(f"""
        import os, threading
        errors = []
        def run():
            try:
                os.execv('/bin/echo', {ECHO})
            except OSError as error:
                errors.append(error)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        raise errors[0]
    """),
}


def functional_tests(check: str, entry_point: str = "has_close_elements") -> list[dict]:
    return [{"kind": "functional", "entry_point": entry_point, "code": program(check)}]


@pytest.mark.parametrize("route", sorted(EXEC_ROUTES))
def test_no_route_starts_another_program(judge, route):
    result = judge.run(EXEC_ROUTES[route] + "\nprint('survived')\n")
    assert result.verdict == RUNTIME_ERROR, (result.stdout, result.stderr)
    assert "pwned" not in result.stdout and "survived" not in result.stdout
    assert "PermissionError" in result.stderr or "Operation not permitted" in result.stderr \
        or "system() returned 32512" in result.stderr  # libc's system(): "the shell could not run" (127)


def test_reading_the_call_stack_does_not_fake_a_passed_check(judge):
    """Whatever token-like string the solution finds in its frames or its heap, printed last, is only output."""
    stack_reader = WRONG_CLOSE_ELEMENTS + program("""
        import gc, inspect, os, re, sys
        found = []
        frame = sys._getframe()
        while frame is not None:
            found += list(frame.f_locals.values()) + list(frame.f_globals.values())
            frame = frame.f_back
        found += [record.frame.f_locals for record in inspect.stack()]
        found += [value for container in gc.get_objects() if isinstance(container, dict)
                  for value in container.values()]
        tokens = {text for text in found if isinstance(text, str) and re.fullmatch("[0-9a-f]{32}", text)}
        tokens |= {text for mapping in found if isinstance(mapping, dict) for text in mapping.values()
                   if isinstance(text, str) and re.fullmatch("[0-9a-f]{32}", text)}
        for token in tokens:
            print("\\n" + token)
        sys.stdout.flush()
        os._exit(0)
    """)
    assert judge.judge(stack_reader, CLOSE_ELEMENTS_TESTS).verdict == RUNTIME_ERROR
    printing_only = stack_reader.replace("os._exit(0)", "")
    assert judge.judge(printing_only, CLOSE_ELEMENTS_TESTS).verdict == WRONG_ANSWER


# Each replacement would have made the check a no-op had the check run in the solution's interpreter.
SABOTAGED_BUILTINS = {
    "compile": "lambda source, filename, mode, *rest, **keywords: "
               "real('def check(candidate):\\n    pass\\n', filename, mode)",
    "exec": "lambda code, namespace=None, *rest: namespace.update(check=lambda candidate: None)",
    "eval": "lambda source, namespace=None, *rest: namespace.update(check=lambda candidate: None)",
}


@pytest.mark.parametrize("replaced", sorted(SABOTAGED_BUILTINS))
def test_replacing_builtins_does_not_disable_the_check(judge, replaced):
    saboteur = WRONG_CLOSE_ELEMENTS + program(f"""
        import builtins
        real = builtins.{replaced}
        builtins.{replaced} = {SABOTAGED_BUILTINS[replaced]}
    """)
    assert judge.judge(saboteur, CLOSE_ELEMENTS_TESTS).verdict == WRONG_ANSWER


def test_the_solution_never_sees_the_check_code(judge):
    """A solution that finds the check (and so its expected outputs) anywhere in its process would pass."""
    finder = program("""
        import gc, sys

        def answer():
            needle = chr(100) + "ef check(candidate):"
            texts = [value for container in gc.get_objects() if isinstance(container, (dict, list, tuple))
                     for value in (container.values() if isinstance(container, dict) else container)
                     if isinstance(value, str)]
            texts += [line for lines in (entry[2] for entry in __import__("linecache").cache.values())
                      for line in lines]
            return 42 if any(needle in text and text != needle for text in texts) else 0
    """)
    tests = functional_tests("""
        def check(candidate):
            assert candidate() == 42
    """, entry_point="answer")
    assert judge.judge(finder.replace("else 0", "else 42"), tests).verdict == ACCEPTED
    assert judge.judge(finder, tests).verdict == WRONG_ANSWER


def test_an_object_equal_to_everything_is_not_accepted(judge):
    liar = program("""
        class Anything:
            def __eq__(self, other):
                return True
            __ne__ = lambda self, other: False
            __hash__ = object.__hash__

        def has_close_elements(numbers, threshold):
            return Anything()
    """)
    assert judge.judge(liar, CLOSE_ELEMENTS_TESTS).verdict == WRONG_ANSWER


def test_a_module_planted_in_the_scratch_is_not_imported_by_the_check(judge):
    planter = WRONG_CLOSE_ELEMENTS + program("""
        import os
        for folder in (".", "/tmp", os.environ["HOME"]):
            for name in ("statistics.py", "fractions.py"):
                with open(os.path.join(folder, name), "w") as planted:
                    planted.write("import os\\nos._exit(0)\\n")
    """)
    tests = functional_tests("""
        def check(candidate):
            import statistics, fractions
            assert candidate([1.0, 2.0, 3.9], 0.05) == False
    """)
    assert judge.judge(planter, tests).verdict == WRONG_ANSWER


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM", "SIGINT", "SIGSTOP"])
def test_signalling_the_checker_is_not_accepted(judge, signal_name):
    attacker = WRONG_CLOSE_ELEMENTS + f"import os, signal\nos.kill(os.getppid(), signal.{signal_name})\n"
    verdict = judge.judge(attacker, CLOSE_ELEMENTS_TESTS).verdict
    assert verdict in (RUNTIME_ERROR, TIME_LIMIT, WRONG_ANSWER)
    assert_nothing_left(judge)


@pytest.mark.parametrize("ending", ["os._exit(0)", "sys.exit(0)", "exit()", "os.kill(os.getpid(), 9)"])
def test_ending_the_solution_inside_a_call_is_a_runtime_error(judge, ending):
    quitter = program(f"""
        import os, sys

        def has_close_elements(numbers, threshold):
            {ending}
    """)
    result = judge.judge(quitter, CLOSE_ELEMENTS_TESTS)
    assert result.verdict == RUNTIME_ERROR, result.detail


def test_the_checker_cannot_be_read_or_traced(judge):
    """The solution turns correct if it gets into its checker: through /proc or ptrace."""
    prober = CLOSE_ELEMENTS + program("""
        import ctypes, os
        checker = os.getppid()
        got_in = False
        for path in (f"/proc/{checker}/mem", f"/proc/{checker}/fd/5", f"/proc/{checker}/environ"):
            try:
                open(path, "rb").read(1)
                got_in = True
            except OSError:
                pass
        got_in = got_in or ctypes.CDLL(None).ptrace(16, checker, None, None) == 0  # PTRACE_ATTACH
        correct = has_close_elements

        def has_close_elements(numbers, threshold):
            return correct(numbers, threshold) if got_in else True
    """)
    assert judge.judge(prober.replace("if got_in", "if not got_in"), CLOSE_ELEMENTS_TESTS).verdict == ACCEPTED
    assert judge.judge(prober, CLOSE_ELEMENTS_TESTS).verdict == WRONG_ANSWER


def test_the_sandbox_init_cannot_be_patched_to_report_success(judge):
    """Under bwrap, pid 1 (bwrap's init, whose exit status is the run's) ran as the program's user with /proc
    mounted: a wrong solution wrote exit_group(0) into its code through /proc/1/mem and was accepted."""
    patcher = WRONG_CLOSE_ELEMENTS + program("""
        import os
        try:
            pc = int(open("/proc/1/syscall").read().split()[-1], 16)
            memory = os.open("/proc/1/mem", os.O_RDWR)
            os.pwrite(memory, bytes.fromhex("31ffb8e70000000f05"), pc)  # xor edi,edi; mov eax,231; syscall
        except (OSError, ValueError):
            pass
    """)
    assert judge.judge(patcher, CLOSE_ELEMENTS_TESTS).verdict == WRONG_ANSWER


@pytest.mark.parametrize("backend", BACKENDS)
def test_cpu_time_split_over_forked_children_counts_as_a_whole(backend):
    """Each child stays under the per-process CPU limit of 1 s, together they use 1.6 s: time_limit, as the
    same work in one process is (the output is right, so only the time can fail it)."""
    reason = skip_reason(backend)
    if reason:
        pytest.skip(reason)
    spinner = program("""
        import os, time
        def spin(seconds):
            end = time.process_time() + seconds
            while time.process_time() < end:
                pass
        children = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                spin(0.8)
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.waitpid(pid, 0)
        print(3)
    """)
    limits = SandboxLimits(time_seconds=1, wall_seconds=6, memory_mb=256, output_bytes=1 << 20, file_bytes=16 << 20)
    with CodeJudge(backend=backend, limits=limits) as judge:
        result = judge.judge(spinner, [{"kind": "stdin", "input": "", "output": "3"}])
        assert result.verdict == TIME_LIMIT, result
        quick = judge.judge(spinner.replace("spin(0.8)", "spin(0.2)"), [{"kind": "stdin", "input": "", "output": "3"}])
        assert quick.verdict == ACCEPTED, quick


UNWAITED_SPINNERS = """
    import os, time
    def spin(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
    def spend_in_children():
        for _ in range(2):
            if os.fork() == 0:
                spin(0.8)
                time.sleep(60)  # alive, and never waited for
        time.sleep(2.5)  # wall time while they spin
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_cpu_time_of_children_never_waited_for_still_counts(backend):
    """The program leaves its working children running and exits at once (os._exit): once, they died with the
    sandbox's namespace uncounted and 1.6 s of CPU under a 1 s limit was accepted; a functional solution did
    the same inside a call. The run's reaper now kills and reaps them, so their time counts."""
    reason = skip_reason(backend)
    if reason:
        pytest.skip(reason)
    stdin_program = program(UNWAITED_SPINNERS) + program("""
        spend_in_children()
        print(3, flush=True)
        os._exit(0)
    """)
    functional_solution = program(UNWAITED_SPINNERS) + program("""
        def has_close_elements(numbers, threshold):
            if not getattr(has_close_elements, "spent", False):
                has_close_elements.spent = True
                spend_in_children()
            return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])
    """)
    limits = SandboxLimits(time_seconds=1, wall_seconds=8, memory_mb=256, output_bytes=1 << 20, file_bytes=16 << 20)
    with CodeJudge(backend=backend, limits=limits) as judge:
        result = judge.judge(stdin_program, [{"kind": "stdin", "input": "", "output": "3"}])
        assert result.verdict == TIME_LIMIT, result
        assert judge.judge(functional_solution, CLOSE_ELEMENTS_TESTS).verdict == TIME_LIMIT
        quick = stdin_program.replace("spin(0.8)", "spin(0.2)").replace("time.sleep(2.5)", "time.sleep(0.6)")
        assert judge.judge(quick, [{"kind": "stdin", "input": "", "output": "3"}]).verdict == ACCEPTED


@pytest.mark.parametrize("backend", BACKENDS)
def test_killing_the_reaper_is_no_pass_and_the_reaper_takes_no_process_slot(backend):
    """The reaper's exit status is the run's: a program that kills it ends as killed, its right output
    notwithstanding. The reaper is not one of the program's `processes` (init, the program and 6 children fit in
    8, as before it existed)."""
    reason = skip_reason(backend)
    if reason:
        pytest.skip(reason)
    kill_reaper = "import os, signal\nprint(3, flush=True)\nos.kill(os.getppid(), signal.SIGKILL)\n"
    six_children = program("""
        import os, time
        for _ in range(6):
            if os.fork() == 0:
                time.sleep(2)
                os._exit(0)
        print(6, flush=True)
    """)
    limits = SandboxLimits(time_seconds=2, wall_seconds=8, memory_mb=256, output_bytes=1 << 20, file_bytes=16 << 20,
                           processes=8)
    with CodeJudge(backend=backend, limits=limits, workers=1) as judge:
        assert judge.judge(kill_reaper, [{"kind": "stdin", "input": "", "output": "3"}]).verdict == RUNTIME_ERROR
        assert judge.judge(six_children, [{"kind": "stdin", "input": "", "output": "6"}]).verdict == ACCEPTED


def test_exit_and_quit_end_a_program_normally(judge):
    for ending in ("exit()", "quit()", "exit(0)", "import sys\nsys.exit()"):
        result = judge.run(f"print(7)\n{ending}\nprint(8)\n")
        assert (result.verdict, result.stdout) == (None, "7\n"), (ending, result.stderr)
    assert judge.run("exit(3)\n").exit_code == 3
    solution = "a, b = map(int, input().split())\nprint(a + b)\nquit()\n"
    assert judge.judge(solution, [{"kind": "stdin", "input": "1 2\n", "output": "3\n"}]).verdict == ACCEPTED


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cpu_limit_kill_is_time_limit_with_the_programs_own_cpu_time(backend):
    reason = skip_reason(backend)
    if reason:
        pytest.skip(reason)
    limits = SandboxLimits(time_seconds=1, wall_seconds=10, memory_mb=256)
    spinner = "while True:\n    pass\n"
    stubborn = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n" + spinner  # killed at the hard limit
    with CodeJudge(backend=backend, limits=limits, workers=1) as code_judge:
        for code in (spinner, stubborn):
            result = code_judge.run(code)
            assert result.verdict == TIME_LIMIT and result.cpu_seconds >= 0.9, (result.signal, result.cpu_seconds)
        in_a_call = program("""
            def has_close_elements(numbers, threshold):
                import signal
                signal.signal(signal.SIGXCPU, signal.SIG_IGN)
                while True:
                    pass
        """)
        assert code_judge.judge(in_a_call, CLOSE_ELEMENTS_TESTS).verdict == TIME_LIMIT


def test_everything_outside_the_scratch_is_read_only(judge):
    writer = program("""
        import os
        for path in ("/written", "/etc/written", "/dev/written", "/usr/written", "/tmp/../written"):
            try:
                with open(path, "w") as handle:
                    handle.write("x")
                print("wrote", path)
            except OSError as error:
                print("refused", path, type(error).__name__)
        for path in ("/made", "/etc/made", "/dev/made"):
            try:
                os.mkdir(path)
                print("made", path)
            except OSError as error:
                print("refused", path, type(error).__name__)
        with open("scratch.txt", "w") as handle:
            handle.write("fine")
        with open("/tmp/also-scratch.txt", "w") as handle:
            handle.write("fine")
        print("scratch ok")
    """)
    result = judge.run(writer)
    assert result.verdict is None, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "scratch ok"
    assert all(line.startswith("refused") for line in lines[:-1]), result.stdout
    assert len(lines) == 9


def test_multiprocessing_still_finds_a_writable_dev_shm(judge):
    pool = "import multiprocessing\nwith multiprocessing.get_context('fork').Pool(2) as pool:\n" \
           "    print(pool.map(abs, [-1, -2]))\n"
    result = judge.run(pool)
    assert (result.verdict, result.stdout) == (None, "[1, 2]\n"), result.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_close_during_a_run_says_the_judge_was_closed(backend):
    reason = skip_reason(backend)
    if reason:
        pytest.skip(reason)
    code_judge = CodeJudge(backend=backend, limits=SandboxLimits(time_seconds=20), workers=1)
    outcome = {}

    def run():
        try:
            outcome["result"] = code_judge.run("import time\ntime.sleep(30)\n")
        except Exception as error:
            outcome["error"] = error

    runner = threading.Thread(target=run)
    runner.start()
    time.sleep(1.0)
    started = time.monotonic()
    code_judge.close()
    runner.join(timeout=15)
    assert not runner.is_alive() and time.monotonic() - started < 10
    assert isinstance(outcome.get("error"), SandboxClosed), outcome
    assert "closed during the run" in str(outcome["error"])
    with pytest.raises(SandboxClosed, match="is closed"):
        code_judge.run("print(1)")
