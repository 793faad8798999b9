"""The vLLM sidecar of a GPU pod: starts vLLM server processes for the trainer container, on request.

`python deploy/vllm_sidecar.py --socket /run/mirrorlab/vllm-sidecar.sock` listens on a Unix socket in a
volume the pod's containers share. A client (the trainer's hybrid manager) connects and sends one message
in multiprocessing.connection framing: JSON {"settings": {...}, "environment": {"CUDA_VISIBLE_DEVICES": "3"}}.
The sidecar starts `python -m training.hybrid.server --fd N --settings JSON` with the connected socket as
fd N, closes its own copy and listens again. From then on the client talks to the server over that socket
exactly as if it had spawned it (training/hybrid/server.py's protocol); when the server exits the socket
closes, and a new connection starts a new server (a restart after a crash).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import struct
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# Environment a client may set for its server: which GPU it runs on, and vLLM's own switches.
ALLOWED_ENVIRONMENT_PREFIXES = ("CUDA_VISIBLE_DEVICES", "VLLM_")
REQUEST_TIMEOUT_SECONDS = 30


def server_command(module: str, fd: int, settings: dict) -> list[str]:
    """The server process's command line."""
    return [sys.executable, "-m", module, "--fd", str(fd), "--settings", json.dumps(settings)]


def server_environment(requested: dict) -> dict[str, str]:
    """This process's environment plus the allowed names of the request; a refused name raises ValueError."""
    refused = [name for name in requested if not name.startswith(ALLOWED_ENVIRONMENT_PREFIXES)]
    if refused:
        raise ValueError(f"environment names {refused} are not allowed (only CUDA_VISIBLE_DEVICES and VLLM_*)")
    environment = {**os.environ, **{name: str(value) for name, value in requested.items()}}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), environment.get("PYTHONPATH")]))
    return environment


def receive_exactly(client: socket.socket, size: int) -> bytes:
    """`size` bytes from the socket; EOFError when the client hangs up first."""
    chunks, received = [], 0
    while received < size:
        chunk = client.recv(min(size - received, 1 << 20))
        if not chunk:
            raise EOFError("the client closed the connection before its request was complete")
        chunks.append(chunk)
        received += len(chunk)
    return b"".join(chunks)


def receive_request(client: socket.socket) -> dict:
    """One message in multiprocessing.connection framing (a 4-byte big-endian length, then the bytes), as JSON."""
    (size,) = struct.unpack("!i", receive_exactly(client, 4))
    if size < 0:  # longer messages announce an 8-byte length after -1
        (size,) = struct.unpack("!Q", receive_exactly(client, 8))
    return json.loads(receive_exactly(client, size))


def start_server(client: socket.socket, module: str) -> subprocess.Popen:
    """Read the client's request, then start its server on the client's socket."""
    client.settimeout(REQUEST_TIMEOUT_SECONDS)  # a client that never sends its request does not block the others
    request = receive_request(client)
    client.settimeout(None)  # the server reads the socket blocking
    fd = client.fileno()
    return subprocess.Popen(server_command(module, fd, request["settings"]), pass_fds=(fd,),
                            env=server_environment(request.get("environment", {})))


def serve(socket_path: Path, module: str) -> None:
    """Accept connections until SIGTERM; each starts one server process."""
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    socket_path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen()
    servers: list[subprocess.Popen] = []

    def stop(_signal, _frame):
        for server in servers:
            server.terminate()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"vllm sidecar: listening on {socket_path}", flush=True)
    while True:
        client, _address = listener.accept()
        with client:
            try:
                servers.append(start_server(client, module))
                print(f"vllm sidecar: started server pid {servers[-1].pid}", flush=True)
            except (OSError, EOFError, ValueError, KeyError) as error:  # a bad request ends that client only
                print(f"vllm sidecar: refused a request: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        servers = [server for server in servers if server.poll() is None]  # reap the servers that exited


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/vllm_sidecar.py", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", type=Path, required=True, help="Unix socket path in a volume the pod shares")
    parser.add_argument("--server-module", default="training.hybrid.server", help="module the servers run")
    args = parser.parse_args(argv)
    serve(args.socket, args.server_module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
