"""The RL engine of Mirrorlab: a plain library (no Django, no Celery).

Heavy dependencies (torch, vllm, megatron) are imported only inside the modules
that need them, so `training.config` stays importable from the web server.
"""
