"""deploy/ holds working files: every YAML parses, names real settings, modules and queues;
GPU pods share GPUs and /dev/shm."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
OUR_IMAGES = ("mirrorlab:cpu", "mirrorlab:gpu")
# Environment names our containers may set that other programs read, with the reader.
READ_BY_OTHER_PROGRAMS = {
    "HF_HOME": "huggingface_hub (model cache on the shared volume)",
    "NVIDIA_VISIBLE_DEVICES": "the NVIDIA container runtime (which GPUs a container sees)",
    "POD_NAME": "the worker's Celery name (-n gpu@$(POD_NAME)), from the downward API",
}
ENV_READERS = ("envstr", "envbool", "envint", "envlist")


def settings_names() -> set[str]:
    """The environment names webapp/settings.py reads (first argument of envstr/envbool/envint/envlist)."""
    tree = ast.parse((ROOT / "webapp" / "settings.py").read_text())
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ENV_READERS
            and node.args and isinstance(node.args[0], ast.Constant)}


def load_all(path: Path) -> list[dict]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def our_compose_services() -> dict[str, dict]:
    return {name: service for name, service in compose()["services"].items() if service.get("image") in OUR_IMAGES}


def k8s_documents() -> list[dict]:
    return [document for path in sorted(K8S.glob("*.yaml")) if path.name != "kustomization.yaml"
            for document in load_all(path)]


def pod_specs() -> dict[str, dict]:
    """Workload name -> its pod spec."""
    return {document["metadata"]["name"]: document["spec"]["template"]["spec"] for document in k8s_documents()
            if document["kind"] in ("Deployment", "StatefulSet")}


def our_k8s_containers() -> list[dict]:
    return [container for spec in pod_specs().values()
            for container in spec.get("initContainers", []) + spec["containers"]
            if container["image"] in OUR_IMAGES]


def config_map_keys() -> set[str]:
    return {key for document in k8s_documents() if document["kind"] in ("ConfigMap", "Secret")
            and document["metadata"]["name"] in ("mirrorlab-settings", "mirrorlab-secrets")
            for key in {**document.get("data", {}), **document.get("stringData", {})}}


def command_of(container: dict) -> str:
    return " ".join(container.get("command", []))


def probe_commands(container: dict) -> list[str]:
    probes = (container.get(name, {}) for name in ("readinessProbe", "livenessProbe", "startupProbe"))
    return [" ".join(probe["exec"]["command"]) for probe in probes if "exec" in probe]


def test_settings_reader_finds_the_known_settings():
    names = settings_names()
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "MIRRORLAB_DATA_DIR", "ALLOWED_HOSTS"} <= names


def test_every_yaml_file_parses():
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert DEPLOY / "compose.yaml" in files and len(files) >= 10
    for path in files:
        assert load_all(path), f"{path.relative_to(ROOT)} is empty"


def test_compose_env_names_are_settings():
    known = settings_names() | set(READ_BY_OTHER_PROGRAMS)
    for name, service in our_compose_services().items():
        unknown = set(service["environment"]) - known
        assert not unknown, f"compose service {name} sets {sorted(unknown)}, which webapp/settings.py does not read"


def test_k8s_env_names_are_settings():
    known = settings_names() | set(READ_BY_OTHER_PROGRAMS)
    unknown = config_map_keys() - known
    assert not unknown, f"mirrorlab-settings/mirrorlab-secrets hold {sorted(unknown)}, unknown to webapp/settings.py"
    for container in our_k8s_containers():
        names = {variable["name"] for variable in container.get("env", [])}
        assert not names - known, f"container {container['name']} sets {sorted(names - known)}"
        references = {source.get("configMapRef", source.get("secretRef"))["name"] for source in container["envFrom"]}
        assert references == {"mirrorlab-settings", "mirrorlab-secrets"}, container["name"]


def test_compose_services_get_the_settings_they_need():
    for name, service in our_compose_services().items():
        for setting in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "MIRRORLAB_DATA_DIR"):
            assert setting in service["environment"], f"{name} lacks {setting}"
        assert "mirrorlab-data:/data" in service["volumes"], f"{name} does not mount the shared data volume"
        assert "healthcheck" in service, name
    assert config_map_keys() >= {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "MIRRORLAB_DATA_DIR"}


def test_commands_name_real_modules_and_the_routed_queues():
    from webapp.celery import app

    routed = {route["queue"] for route in app.conf.task_routes.values()}
    assert routed == {"gpu", "cpu"}
    commands = [" ".join(service["command"]) for service in our_compose_services().values()]
    commands += [command_of(container) for container in our_k8s_containers()]
    checks = [" ".join(service["healthcheck"]["test"]) for service in our_compose_services().values()]
    checks += [command for container in our_k8s_containers() for command in probe_commands(container)]
    workers = [command for command in commands if command.startswith("celery")]
    queues = {re.search(r"-Q (\w+)", command).group(1) for command in workers}
    assert queues == routed
    assert all("-A workers worker" in command for command in workers)
    assert all("--pool=solo" in command for command in workers if "-Q gpu" in command)
    web = [command for command in commands if "gunicorn" in command]
    assert web and all("webapp.wsgi:application" in command for command in web)
    assert importlib.util.find_spec("webapp.wsgi"), "the module the web commands serve"

    scripts = {re.search(r"(deploy/\S+\.py)", command).group(1)
               for command in commands + checks if "deploy/" in command}
    assert {"deploy/healthcheck.py", "deploy/vllm_sidecar.py"} <= scripts
    for script in scripts:
        assert (ROOT / script).is_file(), script


def test_compose_gpu_worker_reserves_nvidia_gpus_and_shared_memory():
    worker = compose()["services"]["worker-gpu"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert worker["shm_size"] and "-Q gpu" in " ".join(worker["command"])


def test_compose_services_start_after_their_dependencies_are_healthy():
    services = compose()["services"]
    for name, service in services.items():
        for dependency, condition in service.get("depends_on", {}).items():
            assert condition == {"condition": "service_healthy"}, name
            assert "healthcheck" in services[dependency], dependency


def test_k8s_gpu_pod_runs_trainer_and_vllm_sidecar_sharing_gpus_and_shm():
    spec = pod_specs()["mirrorlab-gpu"]
    containers = {container["name"]: container for container in spec["containers"]}
    trainer, vllm = containers["trainer"], containers["vllm"]
    assert int(trainer["resources"]["limits"]["nvidia.com/gpu"]) >= 1
    # The device plugin hands GPUs to one container; the sidecar sees the same (all of the node's) GPUs.
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in vllm["env"]
    shm_volumes = [volume["name"] for volume in spec["volumes"] if volume.get("emptyDir", {}).get("medium") == "Memory"]
    for container in (trainer, vllm):
        mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
        assert mounts.get("/dev/shm") in shm_volumes, f"{container['name']} does not mount the shared /dev/shm"
        assert mounts.get("/data") == "data"
    anti_affinity = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti_affinity["topologyKey"] == "kubernetes.io/hostname"


def test_k8s_gpu_pods_have_a_headless_service_for_the_rendezvous():
    services = {document["metadata"]["name"]: document for document in k8s_documents() if document["kind"] == "Service"}
    statefulset = next(document for document in k8s_documents() if document["metadata"]["name"] == "mirrorlab-gpu"
                       and document["kind"] == "StatefulSet")
    headless = services[statefulset["spec"]["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None"
    trainer_ports = {port["name"] for port in statefulset["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert {port["targetPort"] for port in headless["spec"]["ports"]} <= trainer_ports


def test_k8s_selectors_match_pod_labels_and_services_find_pods():
    documents = k8s_documents()
    pod_labels = []
    for document in documents:
        if document["kind"] in ("Deployment", "StatefulSet"):
            labels = document["spec"]["template"]["metadata"]["labels"]
            assert document["spec"]["selector"]["matchLabels"].items() <= labels.items(), document["metadata"]["name"]
            pod_labels.append(labels)
    for service in (document for document in documents if document["kind"] == "Service"):
        selector = service["spec"]["selector"].items()
        assert any(selector <= labels.items() for labels in pod_labels), f"Service {service['metadata']['name']}"


def test_k8s_volume_mounts_and_claims_exist():
    claims = {document["metadata"]["name"] for document in k8s_documents()
              if document["kind"] == "PersistentVolumeClaim"}
    for document in k8s_documents():
        if document["kind"] not in ("Deployment", "StatefulSet"):
            continue
        spec = document["spec"]["template"]["spec"]
        volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
        volumes |= {template["metadata"]["name"]: {} for template in document["spec"].get("volumeClaimTemplates", [])}
        for container in spec.get("initContainers", []) + spec["containers"]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, f"{document['metadata']['name']}/{container['name']}: {mount['name']}"
        for volume in volumes.values():
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims


def test_kustomization_lists_every_manifest_but_the_ingress_example():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    manifests = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == manifests - {"ingress.yaml"}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_builds_the_manifests_with_the_namespace():
    built = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stderr
    documents = [document for document in yaml.safe_load_all(built.stdout) if document]
    assert all(document["metadata"].get("namespace") == "mirrorlab" for document in documents
               if document["kind"] != "Namespace")


def test_dockerfile_installs_what_setup_sh_installs_and_the_project():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    packages = [package for requirement in re.findall(r'install --quiet ((?:"[^"]+" ?)+)', setup)
                for package in re.findall(r'"([^"]+)"', requirement) if not package.startswith(".")]
    assert len(packages) >= 2, "the CPU and GPU installs of scripts/setup.sh were not found"
    for package in packages:
        assert f'"{package}"' in dockerfile, f"setup.sh installs {package}; deploy/Dockerfile does not"
    assert "torchvision torchaudio torchcodec triton" in dockerfile
    assert "pip install ." in dockerfile and "COPY pyproject.toml" in dockerfile
    stages = set(re.findall(r"^FROM \S+ AS (\S+)", dockerfile, re.MULTILINE))
    assert {"dependencies-cpu", "dependencies-gpu"} <= stages and "FROM dependencies-${VARIANT}" in dockerfile
    python = re.search(r"requires-python = \">=(\d+\.\d+)", (ROOT / "pyproject.toml").read_text()).group(1)
    assert f"python:{python}-" in dockerfile


def test_gpu_smoke_fails_clearly_without_a_gpu(tmp_path):
    """With no nvidia-smi on PATH the script stops at once, says why, and exits 2."""
    (tmp_path / "bash").symlink_to(shutil.which("bash"))
    for tool in ("dirname", "sed"):
        (tmp_path / tool).symlink_to(shutil.which(tool))
    finished = subprocess.run([str(tmp_path / "bash"), str(ROOT / "scripts" / "gpu_smoke.sh")], capture_output=True,
                              text=True, timeout=60, env={"PATH": str(tmp_path)})
    assert finished.returncode == 2
    assert "no usable NVIDIA GPU: nvidia-smi is not on PATH" in finished.stderr


def test_gpu_smoke_refuses_a_torch_without_cuda(tmp_path):
    """A GPU listed by nvidia-smi is not enough: the Python's torch must see CUDA."""
    import os
    import sys

    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: Fake (UUID: GPU-0)'\n")
    fake.chmod(0o755)
    finished = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_smoke.sh"), "--no-install"], capture_output=True,
                              text=True, timeout=120,
                              env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHON": sys.executable})
    assert finished.returncode == 2, finished.stderr
    assert "GPU 0: Fake" in finished.stdout and "torch cannot use CUDA" in finished.stderr


def run_quick_smoke(tmp_path, pytest_exit: int = 0) -> tuple[subprocess.CompletedProcess, list[str]]:
    """gpu_smoke.sh --quick with stand-ins for nvidia-smi, python (records what it is asked to run; a pytest run
    exits `pytest_exit`) and timeout (records its limit and signal); returns the run and the recorded lines."""
    import os

    tmp_path.mkdir(exist_ok=True)
    calls = tmp_path / "calls.log"
    python = f'echo "$*" >> {calls}; case "$1 $2" in "-m pytest") exit {pytest_exit};; esac'
    for name, body in (("nvidia-smi", "echo 'GPU 0: Fake (UUID: GPU-0)'"),
                       ("python", python),
                       ("timeout", f'if [ "$1" = -s ]; then echo "timeout -s $2 $3 $4 $5" >> {calls}; shift 5; '
                                   f'else echo "timeout $1" >> {calls}; shift; fi; exec "$@"')):
        (tmp_path / name).write_text(f"#!/bin/sh\n{body}\n")
        (tmp_path / name).chmod(0o755)
    finished = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_smoke.sh"), "--no-install", "--quick"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}",
                                   "PYTHON": str(tmp_path / "python"), "SMOKE_OUT": str(tmp_path / "out")})
    return finished, calls.read_text().splitlines()


def test_gpu_smoke_quick_runs_each_stage_under_its_time_limit(tmp_path):
    """--quick (a short lease): the decoding files' GPU tests first, then the rest (each stopped by SIGINT, so that
    pytest still writes its report), the switch benchmark (the stand-in python imports vllm), the lean loop with
    grouped against stock attention and 2 RL iterations, each under `timeout`."""
    finished, lines = run_quick_smoke(tmp_path)
    assert finished.returncode == 0, finished.stderr
    runs = [line for line in lines if line.startswith(("-m pytest", "benchmarks/"))]
    limits = [line for line in lines if line.startswith("timeout ")]
    assert "test_lean_decoding.py" in runs[0] and "-k gpu or knob_reaches" in runs[0]
    assert "test_megatron_" in runs[1] and "test_lean_decoding.py" not in runs[1]
    assert runs[2:4] == ["benchmarks/hybrid_switch.py --release restart", "benchmarks/hybrid_switch.py --release sleep"]
    assert runs[4].startswith("benchmarks/torch_engine_throughput.py --variants lean-compiled,lean-compiled-stock ")
    assert runs[5] == "benchmarks/rl_iteration_throughput.py --architecture qwen2-0.5b --iterations 2"
    assert limits == ["timeout -s INT -k 30 120"] * 2 + [f"timeout {seconds}" for seconds in (150, 150, 200, 150)]


def test_gpu_smoke_counts_a_test_stage_stopped_at_its_limit_as_no_failure(tmp_path):
    """A stage that reaches its limit (timeout's exit 124) is reported as stopped and the run goes on to pass; a
    stage whose tests fail fails the run."""
    stopped, _ = run_quick_smoke(tmp_path / "stopped", pytest_exit=124)
    assert stopped.returncode == 0, stopped.stderr
    assert "gpu_smoke: tests_decoding stopped at its 120-second limit" in stopped.stdout
    assert "gpu_smoke: tests stopped at its 120-second limit" in stopped.stdout
    failed, _ = run_quick_smoke(tmp_path / "failed", pytest_exit=1)
    assert failed.returncode == 1 and "gpu_smoke: FAILED" in failed.stderr


FAKE_SERVER = '''
import argparse, json, os
from multiprocessing.connection import Connection
parser = argparse.ArgumentParser()
parser.add_argument("--fd", type=int)
parser.add_argument("--settings")
args = parser.parse_args()
connection = Connection(args.fd)
command, payload = connection.recv()
connection.send(("ok", {"pid": os.getpid(), "settings": json.loads(args.settings), "echo": payload,
                        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}))
connection.recv()  # until the client hangs up or the process is killed
'''


def ask_sidecar(socket_path: Path, request: dict):
    """Connect as the trainer would, send the request; the Connection now talks to the started server."""
    import json
    import socket
    from multiprocessing.connection import Connection

    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(socket_path))
    connection = Connection(client.detach())
    connection.send_bytes(json.dumps(request).encode())
    return connection


def test_vllm_sidecar_starts_a_server_per_connection_and_again_after_a_crash(tmp_path):
    import os
    import signal
    import sys
    import time

    (tmp_path / "fake_server.py").write_text(FAKE_SERVER)
    socket_path = tmp_path / "run" / "sidecar.sock"
    sidecar = subprocess.Popen([sys.executable, str(DEPLOY / "vllm_sidecar.py"), "--socket", str(socket_path),
                                "--server-module", "fake_server"], cwd=tmp_path,
                               env={**os.environ, "PYTHONPATH": str(tmp_path)})
    try:
        deadline = time.monotonic() + 30
        while not socket_path.exists():
            assert time.monotonic() < deadline and sidecar.poll() is None, "the sidecar did not start listening"
            time.sleep(0.05)
        first = ask_sidecar(socket_path, {"settings": {"model_path": "/m", "eos_id": 2},
                                          "environment": {"CUDA_VISIBLE_DEVICES": "3"}})
        first.send(("health", 7))
        status, reply = first.recv()
        assert status == "ok" and reply["settings"] == {"model_path": "/m", "eos_id": 2}
        assert reply["echo"] == 7 and reply["gpu"] == "3"
        os.kill(reply["pid"], signal.SIGKILL)  # the server crashes: its client sees the socket close
        with pytest.raises(EOFError):
            first.recv()
        second = ask_sidecar(socket_path, {"settings": {"model_path": "/m", "eos_id": 2}})
        second.send(("health", 8))
        _status, restarted = second.recv()
        assert restarted["pid"] != reply["pid"] and restarted["echo"] == 8
        refused = ask_sidecar(socket_path, {"settings": {}, "environment": {"LD_PRELOAD": "/evil.so"}})
        with pytest.raises(EOFError):
            refused.recv()
        second.close()
    finally:
        sidecar.terminate()
        sidecar.wait(timeout=30)
    assert sidecar.returncode == 0


def run_healthcheck(check: str, **environment) -> subprocess.CompletedProcess:
    import os
    import sys

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", **environment}
    return subprocess.run([sys.executable, str(DEPLOY / "healthcheck.py"), check], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


def test_healthcheck_passes_with_reachable_services_and_names_an_unreachable_broker(db, settings):
    database = settings.DATABASES["default"]  # the test database pytest-django created
    url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
    healthy = run_healthcheck("services", DATABASE_URL=url)
    assert healthy.returncode == 0, healthy.stderr
    assert "database and broker reachable" in healthy.stdout
    broken = run_healthcheck("services", CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    assert broken.returncode == 1 and "unhealthy (services)" in broken.stderr
    assert run_healthcheck("nonsense").returncode == 2
