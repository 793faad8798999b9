"""Runs of several processes (nnodes * nproc_per_node > 1) under torchrun: the launcher a worker calls, the
entry every rank runs, and the events file between them."""
