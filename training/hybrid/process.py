"""One vLLM server process (training.hybrid.server) seen from the manager: start, call, health-check, stop.

The manager either spawns the server as its child over a socket pair, or, with a sidecar socket (a Kubernetes
GPU pod's vLLM container, deploy/vllm_sidecar.py), connects to the sidecar, which starts a server on that
connection; either way the manager then talks to the server over one Connection in the same protocol.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import training

POLL_SECONDS = 0.5  # how often a waiting call checks that the process still lives
# Set by torchrun for the trainer's ranks; vLLM would read them as its own process group.
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                      "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT")


class VllmProcessDied(RuntimeError):
    """The server process exited or its connection broke; the message holds its log's tail."""


class VllmServerError(RuntimeError):
    """The server ran the command and it failed there; the message holds the server's traceback."""


@dataclass(frozen=True)
class ServerSettings:
    """What the server process builds its engine from (sent to it as JSON)."""

    model_path: str
    eos_id: int
    model_dtype: str = "float32"  # the trainer's dtype; vLLM samples in it on CPU
    dtype: str | None = None  # vLLM's dtype, overriding the choice made from model_dtype
    seed: int = 0
    max_model_len: int | None = None
    kv_cache_memory_bytes: int | None = None
    gpu_memory_utilization: float = 0.4
    release: str = "restart"  # "sleep" builds the engine with vLLM's sleep mode
    vision: bool = False


def server_environment(local_rank: int | None) -> dict[str, str]:
    """This process's environment for the server: no torchrun variables, the rank's own GPU, the project importable.

    local_rank: under torchrun, the rank's device index among the visible ones (None outside torchrun).
    """
    env = {name: value for name, value in os.environ.items()
           if name not in TORCHRUN_VARIABLES and not name.startswith("TORCHELASTIC_")}
    if local_rank is not None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        devices = visible.split(",") if visible else [str(index) for index in range(local_rank + 1)]
        env["CUDA_VISIBLE_DEVICES"] = devices[local_rank]  # the server shares its rank's GPU only
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core runs in the server process itself
    project_root = str(Path(training.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
    return env


def sidecar_environment(local_rank: int | None) -> dict[str, str]:
    """What a sidecar-started server needs of the trainer's environment: the rank's GPU, an in-process engine core."""
    environment = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    if local_rank is not None:  # the sidecar sees the same GPUs as the trainer (the pod's), so the index carries over
        environment["CUDA_VISIBLE_DEVICES"] = server_environment(local_rank)["CUDA_VISIBLE_DEVICES"]
    return environment


class VllmProcess:
    """A started server process and the manager's end of its connection.

    sidecar_socket: the Unix socket of a vLLM sidecar; the server then is the sidecar's child, not ours,
    so its death shows as a closed connection and its output goes to the sidecar's log.
    """

    def __init__(self, settings: ServerSettings, log_path: Path, local_rank: int | None = None,
                 sidecar_socket: str | None = None):
        self.settings = settings
        self.log_path = log_path
        self.local_rank = local_rank
        self.sidecar_socket = sidecar_socket or None
        self.process: subprocess.Popen | None = None
        self.connection: Connection | None = None
        self.info: dict = {}

    @property
    def started(self) -> bool:
        return self.connection is not None

    @property
    def pid(self) -> int | None:
        """The server's process id (as the sidecar sees it in sidecar mode); None while stopped."""
        if self.process is not None:
            return self.process.pid
        return self.info.get("pid") if self.connection is not None else None

    def start(self, timeout: float) -> dict:
        """Start the server and wait until its engine is built; returns its info (pid, dtype, max_model_len)."""
        self.info = {}
        self.connection = self._connect_to_sidecar() if self.sidecar_socket else self._spawn()
        self.info = self._receive(timeout, "start")
        return self.info

    def _connect_to_sidecar(self) -> Connection:
        """Ask the sidecar for a server: one JSON request, then the connection belongs to the started server."""
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(self.sidecar_socket)
        except OSError as error:
            client.close()
            raise VllmProcessDied(f"cannot reach the vLLM sidecar at {self.sidecar_socket} ({error}); is its "
                                  f"container running (deploy/vllm_sidecar.py)?") from error
        connection = Connection(client.detach())
        request = {"settings": asdict(self.settings), "environment": sidecar_environment(self.local_rank)}
        connection.send_bytes(json.dumps(request).encode())
        return connection

    def _spawn(self) -> Connection:
        """Start the server as our child over a socket pair."""
        ours, theirs = socket.socketpair()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "training.hybrid.server", "--fd", str(theirs.fileno()),
                 "--settings", json.dumps(asdict(self.settings))],
                pass_fds=(theirs.fileno(),), env=server_environment(self.local_rank), stdout=log,
                stderr=subprocess.STDOUT,
            )
        theirs.close()
        return Connection(ours.detach())

    def alive(self) -> bool:
        """Our child still runs; in sidecar mode, the connection is open (a dead server shows at the next call)."""
        if self.sidecar_socket:
            return self.connection is not None and not self.connection.closed
        return self.process is not None and self.process.poll() is None

    def healthy(self, timeout: float) -> bool:
        """A cheap round trip within `timeout` seconds: the process lives and its command loop answers."""
        if not self.alive():
            return False
        try:
            self.call("health", timeout=timeout)
        except (VllmProcessDied, TimeoutError):
            return False
        return True

    def call(self, command: str, payload=None, timeout: float | None = None, blobs=()):
        """Send a command (then any byte blobs) and return the server's result."""
        try:
            self.connection.send((command, payload))
            for blob in blobs:
                self.connection.send_bytes(blob)
        except OSError as error:  # a broken pipe or reset connection: the server is gone
            raise VllmProcessDied(self._died_message(command, error)) from error
        return self._receive(timeout, command)

    def _receive(self, timeout: float | None, command: str):
        """Wait for the answer, checking every POLL_SECONDS that the process still lives."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if self.connection.poll(POLL_SECONDS):
                    status, result = self.connection.recv()
                    break
            except (EOFError, OSError) as error:
                raise VllmProcessDied(self._died_message(command, error)) from error
            if not self.alive():
                raise VllmProcessDied(self._died_message(command, "the process exited"))
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the vLLM server (pid {self.pid}) did not answer {command!r} within {timeout} s")
        if status == "error":
            raise VllmServerError(f"the vLLM server failed on {command!r}: {result}")
        return result

    def _died_message(self, command: str, reason) -> str:
        if self.sidecar_socket:
            return (f"the vLLM server (pid {self.pid}, started by the sidecar at {self.sidecar_socket}) died during "
                    f"{command!r} ({reason}); its output is in the sidecar container's log")
        code = self.process.poll() if self.process else None
        return (f"the vLLM server (pid {self.pid}, exit code {code}) died during {command!r} ({reason}); "
                f"the end of its log {self.log_path}:\n{log_tail(self.log_path)}")

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the server to shut down; kill it when it has not exited within `timeout` seconds."""
        if self.alive():
            try:
                self.call("shutdown", timeout=timeout)
            except (VllmProcessDied, VllmServerError, TimeoutError):
                pass  # killed below either way
        self.kill(grace_seconds=timeout)

    def kill(self, grace_seconds: float = 0.0) -> None:
        """Make sure the process is gone (SIGKILL after `grace_seconds`) and the connection closed.

        In sidecar mode closing the connection is all there is: the server exits when it reads the hang-up.
        """
        if self.process is not None:
            try:
                self.process.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait()
        if self.connection is not None:
            self.connection.close()
        self.process, self.connection, self.info = None, None, {}


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file ('' when absent)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
