"""The GPU pod's trainer finds the vLLM sidecar: the same socket path in both containers, on a volume both mount."""

from __future__ import annotations

from pathlib import Path

from tests.test_deploy import pod_specs, settings_names


def test_the_trainer_connects_to_the_socket_the_vllm_sidecar_listens_on():
    containers = {container["name"]: container for container in pod_specs()["mirrorlab-gpu"]["containers"]}
    trainer, vllm = containers["trainer"], containers["vllm"]
    trainer_env = {variable["name"]: variable.get("value") for variable in trainer["env"]}
    socket_path = trainer_env["MIRRORLAB_VLLM_SIDECAR_SOCKET"]
    assert "MIRRORLAB_VLLM_SIDECAR_SOCKET" in settings_names()
    assert vllm["command"][vllm["command"].index("--socket") + 1] == socket_path
    folder = str(Path(socket_path).parent)
    for container in (trainer, vllm):
        assert folder in {mount["mountPath"] for mount in container["volumeMounts"]}, container["name"]
