"""The vLLM server process of the hybrid deployment: `python -m training.hybrid.server --fd N --settings JSON`.

It serves one vLLM engine over a connected socket inherited as file descriptor N (a
multiprocessing Connection): the manager (training.hybrid.process) sends `(command, payload)` and
gets `("ok", result)` or `("error", traceback text)`. Weight blobs (safetensors bytes) follow a
`load_weights` command as raw `send_bytes` messages up to an empty one, so they are not pickled again.
The process exits when the manager closes its end, or on `shutdown`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from multiprocessing.connection import Connection

from common.processes import die_with_parent
from training.rollout.vllm_engine import VllmRolloutEngine

SLEEP_LEVEL = 2  # drop weights and KV cache: new weights always follow a wake-up (vLLM's advice for RL)


class ServedEngine(VllmRolloutEngine):
    """VllmRolloutEngine built with sleep mode when asked; generation is the parent class's."""

    def __init__(self, settings: dict):
        import torch

        super().__init__(
            settings["model_path"], settings["eos_id"],
            model_dtype=getattr(torch, settings.get("model_dtype", "float32")), dtype=settings.get("dtype"),
            seed=settings.get("seed", 0), max_model_len=settings.get("max_model_len"),
            kv_cache_memory_bytes=settings.get("kv_cache_memory_bytes"),
            gpu_memory_utilization=settings.get("gpu_memory_utilization", 0.4),
            update_bucket_bytes=0,  # the manager cuts the buckets
            vision=bool(settings.get("vision")), enable_sleep_mode=settings.get("release") == "sleep")

    def info(self) -> dict:
        """What the manager needs to know: pid, the dtype weights must arrive in, the context length."""
        return {"pid": os.getpid(), "dtype": str(self.llm.llm_engine.model_config.dtype).removeprefix("torch."),
                "max_model_len": self.max_model_len, "on_cpu": self.on_cpu}


class Server:
    """Dispatches the manager's commands to the engine."""

    def __init__(self, connection: Connection, engine: ServedEngine):
        self.connection = connection
        self.engine = engine

    def health(self, _payload) -> dict:
        return self.engine.info()

    def generate(self, payload):
        requests, settings = payload
        return self.engine.generate(requests, settings)

    def load_weights(self, _payload) -> int:
        """Receive safetensors blobs up to an empty one, reloading each into the model; returns the tensor count."""
        loaded = 0
        while blob := self.connection.recv_bytes():
            try:
                loaded += sum(self.engine.llm.collective_rpc("load_weights_from_safetensors", args=(blob,)))
            except Exception:
                while self.connection.recv_bytes():  # drain the rest, so the next command reads cleanly
                    pass
                raise
        self.engine.llm.collective_rpc("refresh_shared_weights")  # a tied LM head (vllm_worker_extension)
        # stale KV blocks would otherwise be reused for prompts seen before the update
        if not self.engine.llm.reset_prefix_cache():
            raise RuntimeError("vLLM refused to reset its prefix cache after a weight update")
        return loaded

    def sleep(self, _payload) -> None:
        self.engine.llm.sleep(level=SLEEP_LEVEL)

    def wake_up(self, _payload) -> None:
        self.engine.llm.wake_up()

    def serve(self) -> None:
        """Answer commands until the manager hangs up or asks for `shutdown`."""
        handlers = {"health": self.health, "generate": self.generate, "load_weights": self.load_weights,
                    "sleep": self.sleep, "wake_up": self.wake_up, "shutdown": lambda _payload: None}
        while True:
            try:
                command, payload = self.connection.recv()
            except EOFError:  # the manager went away: nothing left to serve
                return
            try:
                result = handlers[command](payload)
            except Exception as error:  # reported to the manager, which raises it there
                self.connection.send(("error", f"{type(error).__name__}: {error}\n{traceback.format_exc()}"))
                continue
            if command == "shutdown":
                self.engine.close()  # the engine core and its process groups, then the device memory
            self.connection.send(("ok", result))
            if command == "shutdown":
                return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.hybrid.server", description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, required=True, help="inherited socket connected to the manager")
    parser.add_argument("--settings", required=True, help="JSON of the engine settings (see ServerSettings)")
    args = parser.parse_args(argv)
    die_with_parent()  # never outlive the trainer that started it
    connection = Connection(args.fd)
    try:
        engine = ServedEngine(json.loads(args.settings))
    except Exception as error:  # start-up failures go to the manager, which reports them
        connection.send(("error", f"{type(error).__name__}: {error}\n{traceback.format_exc()}"))
        return 1
    connection.send(("ok", engine.info()))
    Server(connection, engine).serve()
    sys.stdout.flush()
    os._exit(0)  # the engine is closed: skip the interpreter's slow teardown of vLLM's modules (seconds)


if __name__ == "__main__":
    sys.exit(main())
