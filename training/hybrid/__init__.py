"""Hybrid deployment on one node: the trainer and a vLLM server process take turns on the same devices.

The lifecycle manager (training.hybrid.engine.HybridRolloutEngine, the report's checkpoint engine) runs
vLLM in its own process (training.hybrid.server), health-checks it, hands it the trainer's weights in
memory, releases its memory between rollouts (sleep, or stop and restart later) and restarts it after a
crash, timing every phase. With `vllm_sidecar_socket` set, a vLLM sidecar (deploy/vllm_sidecar.py) starts
the servers instead of the trainer. It is the `vllm-hybrid` rollout engine; training/loop.py calls
`release_for_training` before each update and records `take_phase_seconds` (the RolloutEngine protocol).
"""
