"""The code sandbox: hostile programs are contained with the right verdict and leave nothing behind.

Every attack runs on both backends. After each one: no process of the judge's uids is alive, and the
next run starts in an empty scratch directory. Needs root (as CI runs); a backend whose protections
the host lacks is skipped with the probe's reason.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from evaluation.datasets.code_benchmarks import livecodebench_test
from grading.sandbox import (ACCEPTED, MEMORY_LIMIT, OUTPUT_LIMIT, RUNTIME_ERROR, TIME_LIMIT,
                                VERDICTS, WRONG_ANSWER, CodeJudge, ProbeReport, Protection, SandboxUnavailable, probe)
from grading.sandbox.accounts import processes_of
from tests.grading.sandbox_support import BACKENDS, LIMITS, skip_reason

PROJECT_ROOT = Path(__file__).resolve().parents[2]

A_PLUS_B = "a, b = map(int, input().split())\nprint(a + b)\n"
A_PLUS_B_TESTS = [{"kind": "stdin", "input": "1 2\n", "output": "3\n"},
                  {"kind": "stdin", "input": "10 -4", "output": "6"}]
CLOSE_ELEMENTS = '''
def has_close_elements(numbers, threshold):
    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])
'''
CLOSE_ELEMENTS_CHECK = '''
METADATA = {}


def check(candidate):
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False
    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True
'''
CLOSE_ELEMENTS_TESTS = [{"kind": "functional", "entry_point": "has_close_elements", "code": CLOSE_ELEMENTS_CHECK}]




def program(source: str) -> str:
    return textwrap.dedent(source).strip() + "\n"


def assert_nothing_left(judge: CodeJudge) -> None:
    """No process of the sandbox uids survives, and a new run starts in an empty scratch directory."""
    for uid in judge.worker_uids:
        assert processes_of(uid) == [], f"processes of sandbox uid {uid} outlived their run"
    listing = judge.run("import os\nprint(sorted(os.listdir('.')), sorted(os.listdir('/tmp')))")
    assert listing.verdict is None, listing.stderr
    assert listing.stdout.strip() == "[] []"


@pytest.fixture
def world_readable_directory():
    """A directory under /tmp that any uid could read and write, were it not for the sandbox."""
    path = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


def test_it_accepts_a_correct_stdin_solution_and_rejects_a_wrong_one(judge):
    assert judge.judge(A_PLUS_B, A_PLUS_B_TESTS).verdict == ACCEPTED
    wrong = judge.judge("a, b = map(int, input().split())\nprint(a + b if a < 5 else a * b)\n", A_PLUS_B_TESTS)
    assert (wrong.verdict, wrong.passed, wrong.total) == (WRONG_ANSWER, 1, 2)
    assert wrong.detail.startswith("test 1:") and "'-40'" in wrong.detail


def test_it_compares_stdout_token_wise_like_livecodebench(judge):
    result = judge.judge("print('  3.0  ')\nprint()\n", [{"kind": "stdin", "input": "", "output": "3\n"}])
    assert result.verdict == ACCEPTED


def test_a_printed_nan_is_a_wrong_answer_and_never_stops_the_judge(judge):
    """A signalling NaN raised in the judge's Decimal comparison, failing the whole batch with it."""
    for printed, expected in (("sNaN", "3\n"), ("NaN", "3\n"), ("3", "sNaN\n")):
        result = judge.judge(f"print('{printed}')\n", [{"kind": "stdin", "input": "", "output": expected}])
        assert result.verdict == WRONG_ANSWER, (printed, expected)
    same = judge.judge("print('sNaN')\n", [{"kind": "stdin", "input": "", "output": "sNaN\n"}])
    assert same.verdict == ACCEPTED  # the same text still matches


def test_it_accepts_a_correct_functional_solution_and_rejects_a_wrong_one(judge):
    assert judge.judge(CLOSE_ELEMENTS, CLOSE_ELEMENTS_TESTS).verdict == ACCEPTED
    wrong = judge.judge("def has_close_elements(numbers, threshold):\n    return False\n", CLOSE_ELEMENTS_TESTS)
    assert (wrong.verdict, wrong.passed) == (WRONG_ANSWER, 0)


def test_it_judges_leetcode_style_functional_tests(judge):
    case = livecodebench_test({"input": "[3, 1, 2]\n2", "output": "[1, 2]", "testtype": "functional"},
                              "Solution().smallest", "test")
    solution = "class Solution:\n    def smallest(self, numbers, k):\n        return sorted(numbers)[:k]\n"
    assert judge.judge(solution, [case]).verdict == ACCEPTED
    assert judge.judge(solution.replace("[:k]", "[-k:]"), [case]).verdict == WRONG_ANSWER


def test_a_solution_that_exits_before_the_check_is_not_accepted(judge):
    for escape in ("import os\nos._exit(0)", "import sys\nsys.exit(0)", "exit()"):
        result = judge.judge(CLOSE_ELEMENTS + escape + "\n", CLOSE_ELEMENTS_TESTS)
        assert result.verdict == RUNTIME_ERROR, escape
    fake_marker = "def has_close_elements(numbers, threshold):\n    return False\nprint('\\n' + '0' * 32)\n"
    assert judge.judge(fake_marker, CLOSE_ELEMENTS_TESTS).verdict == WRONG_ANSWER


def test_a_check_takes_nothing_but_the_candidate_from_the_solution(judge):
    """A helper the check calls but does not define once came from the solution, which could redefine it to
    agree with a wrong answer (identity encode and decode passed). Now the check fails on it, whatever the
    solution defines; a stub task's helpers come from its prompt (grading.programs.code_task)."""
    from grading.programs import code_task

    honest = "def encode(text):\n    return text[::-1]\n\ndef decode(text):\n    return text[::-1]\n"
    identity = "def encode(text):\n    return text\n\ndef decode(text):\n    return text\n"
    check = program("""
        def check(candidate):
            for word in ("abc", "sandbox", ""):
                assert candidate(encode(word)) == word
    """)
    tests = [{"kind": "functional", "entry_point": "decode", "code": check}]
    for solution in (honest, identity):
        result = judge.judge(solution, tests)
        assert result.verdict == RUNTIME_ERROR and "NameError" in result.detail, result.detail
    stub = "def encode(text):\n    return text[::-1]\n\n\ndef decode(text):\n    \"\"\"Undo encode.\"\"\"\n"
    task = code_task(stub, tests)
    assert judge.judge(honest, task.test_cases).verdict == ACCEPTED
    assert judge.judge(identity, task.test_cases).verdict == WRONG_ANSWER  # the prompt's encode, not its own


def test_a_check_may_call_the_entry_point_by_name_and_a_check_wrapped_twice_still_runs(judge):
    """MBPP-style checks call the function by name (`assert add(1, 2) == 3`) under a prose prompt: that name is
    the candidate. A stub task's check already wrapped (stub_task_check) and wrapped again must not recurse."""
    from grading.programs import code_task, stub_task_check

    check = "def check(candidate):\n    assert add(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
    tests = [{"kind": "functional", "entry_point": "add", "code": check}]
    prose = code_task("Write a function add(a, b) returning a + b.", tests)
    assert judge.judge("def add(a, b):\n    return a + b\n", prose.test_cases).verdict == ACCEPTED
    assert judge.judge("def add(a, b):\n    return a - b\n", prose.test_cases).verdict == WRONG_ANSWER
    stub = "def add(a, b):\n    \"\"\"a + b\"\"\"\n"
    once = [{**tests[0], "code": stub_task_check("\n" + stub, check, "add")}]  # not starting with the prompt
    twice = code_task(stub, once).test_cases
    assert twice[0]["code"].count("_dataset_check=check") == 2
    assert judge.judge("def add(a, b):\n    return a + b\n", twice).verdict == ACCEPTED
    assert judge.judge("def add(a, b):\n    return a * b\n", twice).verdict == WRONG_ANSWER


def test_functional_results_cross_as_plain_values(judge):
    solution = program("""
        from collections import Counter, namedtuple
        Pair = namedtuple("Pair", "left right")

        def shapes(n):
            return [None, True, 2 ** 100, -0.5, "é", b"x", (1, [2]), {3}, frozenset({4}), {"k": (5,)},
                    Counter("aab"), Pair(1, 2), 1 + 2j]
    """)
    tests = [{"kind": "functional", "entry_point": "shapes", "code": program("""
        def check(candidate):
            values = candidate(0)
            assert values == [None, True, 2 ** 100, -0.5, "é", b"x", (1, [2]), {3}, frozenset({4}), {"k": (5,)},
                              {"a": 2, "b": 1}, (1, 2), 1 + 2j]
            assert type(values[6]) is tuple and values[1] is True and values[0] is None
    """)}]
    assert judge.judge(solution, tests).verdict == ACCEPTED


def test_a_solutions_exception_reaches_the_check(judge):
    solution = "def root(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x ** 0.5\n"
    tests = [{"kind": "functional", "entry_point": "root", "code": program("""
        def check(candidate):
            assert candidate(4) == 2
            try:
                candidate(-1)
            except ValueError as error:
                assert str(error) == "negative"
            else:
                assert False, "no ValueError"
    """)}]
    assert judge.judge(solution, tests).verdict == ACCEPTED
    crashing = judge.judge(solution.replace("raise ValueError('negative')", "raise KeyError('negative')"), tests)
    assert crashing.verdict == RUNTIME_ERROR and "KeyError" in crashing.detail


def test_an_endless_functional_solution_gets_time_limit(judge):
    solution = "def has_close_elements(numbers, threshold):\n    while True:\n        pass\n"
    assert judge.judge(solution, CLOSE_ELEMENTS_TESTS).verdict == TIME_LIMIT
    assert_nothing_left(judge)


def test_it_judges_many_in_parallel_in_order(judge):
    wrong = "print(0)\n"
    results = judge.judge_many([(A_PLUS_B, A_PLUS_B_TESTS), (wrong, A_PLUS_B_TESTS), (A_PLUS_B, A_PLUS_B_TESTS),
                                (CLOSE_ELEMENTS, CLOSE_ELEMENTS_TESTS)])
    assert [result.verdict for result in results] == [ACCEPTED, WRONG_ANSWER, ACCEPTED, ACCEPTED]
    assert all(result.verdict in VERDICTS for result in results)


def test_an_infinite_loop_gets_time_limit(judge):
    result = judge.judge("while True:\n    pass\n", A_PLUS_B_TESTS)
    assert result.verdict == TIME_LIMIT
    assert_nothing_left(judge)


def test_a_sleeping_program_gets_time_limit_by_wall_clock(judge):
    assert judge.run("import time\ntime.sleep(60)\n").verdict == TIME_LIMIT
    assert_nothing_left(judge)


def test_a_fork_bomb_is_contained(judge):
    bomb = program("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """)
    result = judge.run(bomb)
    assert result.verdict in (TIME_LIMIT, RUNTIME_ERROR, MEMORY_LIMIT)
    assert_nothing_left(judge)


def test_a_10_gb_allocation_gets_memory_limit(judge):
    assert judge.run("data = bytearray(10 * 1024 ** 3)\nprint(len(data))\n").verdict == MEMORY_LIMIT
    assert judge.run("chunks = []\nwhile True:\n    chunks.append(bytearray(10 ** 7))\n").verdict == MEMORY_LIMIT
    assert_nothing_left(judge)


def test_a_1_gb_file_write_is_contained_and_removed(judge):
    writer = program("""
        with open("big.bin", "wb") as big:
            for _ in range(1024):
                big.write(bytes(1 << 20))
    """)
    assert judge.run(writer).verdict == RUNTIME_ERROR  # "File too large" at file_bytes
    assert_nothing_left(judge)


def test_100_mb_of_output_gets_output_limit(judge):
    assert judge.run("import sys\nsys.stdout.write('x' * 100_000_000)\n").verdict == OUTPUT_LIMIT
    assert judge.run("while True:\n    print('y' * 1000)\n").verdict == OUTPUT_LIMIT
    assert_nothing_left(judge)


def test_no_network_to_loopback_or_outside(judge):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.3)
        port = listener.getsockname()[1]
        for address in (("127.0.0.1", port), ("1.1.1.1", 80), ("8.8.8.8", 53)):
            result = judge.run(f"import socket\nsocket.create_connection({address!r}, timeout=2)\nprint('connected')")
            assert result.verdict == RUNTIME_ERROR and "connected" not in result.stdout, address
        udp = judge.run(f"import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', "
                        f"('127.0.0.1', {port}))\nprint('sent')")
        assert udp.verdict == RUNTIME_ERROR
        with pytest.raises(socket.timeout):
            listener.accept()  # nothing ever reached the test's listener
    assert_nothing_left(judge)


def test_host_files_are_not_readable(judge, world_readable_directory):
    secret = world_readable_directory / "secret.txt"
    secret.write_text("the-secret-" + uuid.uuid4().hex)
    secret.chmod(0o644)
    root_secret = Path(tempfile.mkdtemp(dir="/root")) / "secret.txt"
    root_secret.write_text(secret.read_text())
    try:
        paths = [secret, root_secret, "/etc/shadow", "/etc/passwd", PROJECT_ROOT / "README.md",
                 PROJECT_ROOT / ".venv" / "pyvenv.cfg"]
        reader = program(f"""
            for path in {[str(path) for path in paths]!r}:
                try:
                    print(path, open(path).read())
                except OSError as error:
                    print(path, "refused:", type(error).__name__)
        """)
        result = judge.run(reader)
        assert result.verdict is None, result.stderr
        assert result.stdout.count("refused:") == len(paths)
        for forbidden in ("the-secret-", "root:", "home =", "Mirrorlab"):
            assert forbidden not in result.stdout
    finally:
        shutil.rmtree(root_secret.parent)


def test_nothing_is_written_outside_the_scratch_directory(judge, world_readable_directory):
    name = "written-by-sandbox-" + uuid.uuid4().hex
    targets = [Path("/tmp") / name, world_readable_directory / name, PROJECT_ROOT / name, Path("/root") / name,
               Path("/dev/shm") / name]
    writer = program(f"""
        import os
        for path in {[str(path) for path in targets]!r}:
            try:
                with open(path, "w") as handle:
                    handle.write("pwned")
                print(path, "written inside the sandbox's own view")
            except OSError as error:
                print(path, "refused:", type(error).__name__)
        print("cwd", os.getcwd())
    """)
    result = judge.run(writer)
    assert result.verdict is None, result.stderr
    for target in targets:
        assert not target.exists(), f"the sandbox wrote {target} on the host"
    assert_nothing_left(judge)


@pytest.mark.parametrize("attack", [
    "import os\nos.kill(os.getppid(), 9)",
    "import os\nos.kill(1, 9)",
    "import os\nos.kill(-1, 9)",
    "import subprocess\nsubprocess.run('kill -9 -1', shell=True)",
])
def test_killing_the_parent_leaves_the_judge_working(judge, attack):
    result = judge.run(attack + "\nprint('still here')\n")
    assert result.verdict in (None, RUNTIME_ERROR)
    assert judge.judge(A_PLUS_B, A_PLUS_B_TESTS).verdict == ACCEPTED
    assert_nothing_left(judge)


def test_a_daemon_does_not_outlive_its_run(judge):
    daemon = program("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for fd in range(3):
                    os.close(fd)
                time.sleep(30)
            os._exit(0)
        print("parent done")
    """)
    result = judge.run(daemon)
    assert result.verdict is None and result.stdout == "parent done\n"
    assert_nothing_left(judge)


def test_sandbox_runs_as_an_unprivileged_uid_without_capabilities(judge):
    result = judge.run("import os\nprint(os.getuid(), os.geteuid(), os.getgroups())\n")
    uid, euid, groups = result.stdout.split(maxsplit=2)
    assert int(uid) in judge.worker_uids and int(euid) == int(uid) and groups.strip() == "[]"


def test_the_probe_reports_every_protection():
    report = probe()
    summary = report.summary()
    for name in ("setuid", "user_namespaces", "bwrap", "seccomp", "landlock", "pid_namespace", "net_namespace"):
        assert name in summary and name in report.protections
    assert all(item.detail for item in report.protections.values())
    with pytest.raises(ValueError, match="unknown sandbox protections"):
        report.missing(["teleportation"])


def test_a_judge_refuses_when_the_host_lacks_its_minimum(monkeypatch):
    real = probe()
    lacking = {**real.protections, "landlock": Protection("landlock", False, "Landlock is disabled (test)")}
    monkeypatch.setattr("grading.sandbox.judge.probe", lambda: ProbeReport(lacking))
    with pytest.raises(SandboxUnavailable, match=r"landlock \(Landlock is disabled \(test\)\)"):
        CodeJudge(backend="forkserver", minimum=["landlock", "seccomp"])
    really_missing = [name for name, item in real.protections.items() if not item.available]
    if really_missing:
        monkeypatch.undo()
        with pytest.raises(SandboxUnavailable, match=really_missing[0]):
            CodeJudge(backend="forkserver", minimum=really_missing)


@pytest.mark.parametrize("backend", BACKENDS)
def test_judges_can_be_created_and_closed_repeatedly(backend):
    reason = skip_reason(backend)
    if reason:
        pytest.skip(reason)
    for _ in range(3):
        code_judge = CodeJudge(backend=backend, limits=LIMITS, workers=2)
        servers = [worker.server.process for worker in code_judge._workers]
        uids = code_judge.worker_uids
        assert code_judge.run("import time\ntime.sleep(0.05)\nprint(7)").stdout == "7\n"
        code_judge.close()
        assert all(server.poll() is not None for server in servers)
        assert all(processes_of(uid) == [] for uid in uids)
    with pytest.raises(RuntimeError, match="closed"):
        code_judge.run("print(1)")


def test_the_sandbox_root_is_built_where_no_bound_path_lives():
    from grading.sandbox.rootfs import staging_point

    assert staging_point(["/usr/bin/python3", "/root/.pyenv"]) == "/tmp"
    assert staging_point(["/tmp/checkout/.venv/bin/bwrap"]) == "/mnt"
    assert staging_point(["/tmp/a", "/mnt"]) == "/media"


def test_a_program_ends_as_a_plain_interpreter_does_after_its_threads_and_exit_handlers(judge):
    """The deep-recursion idiom (main() in a thread never joined) and an answer printed by an atexit handler
    are accepted; the main module's failure still decides the status, and a handler's error changes nothing."""
    threaded = ("import threading, sys\nsys.setrecursionlimit(10**6)\nthreading.stack_size(1 << 26)\n"
                "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n"
                "threading.Thread(target=main).start()\n")
    assert judge.judge(threaded, A_PLUS_B_TESTS).verdict == ACCEPTED
    at_exit = ("import atexit\nout = []\natexit.register(lambda: print(*out))\n"
               "atexit.register(lambda: 1 / 0)\na, b = map(int, input().split())\nout.append(a + b)\n")
    assert judge.judge(at_exit, A_PLUS_B_TESTS).verdict == ACCEPTED
    failing = "import atexit\natexit.register(lambda: print(3))\nraise ValueError('main failed')\n"
    assert judge.judge(failing, [A_PLUS_B_TESTS[0]]).verdict == RUNTIME_ERROR
