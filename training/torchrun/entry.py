"""One torchrun rank of a run launched by a worker: `torchrun ... -m training.torchrun.entry SPEC.json`.

The launcher (launcher.py) writes the spec: the resolved config, the prompt records
(with their database ids), the run's folders, an events file, a stop file and a removals file. Every rank runs
the configured trainer backend; rank 0 appends its progress to the events file (events.py), treats the stop
file's existence as a stop request and reads the launcher's answers to its checkpoint removal requests from the
removals file.
No Django here: the launcher turns the events into rows.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

if __name__ == "__main__":  # run by torchrun: arm the parent-death signal before the seconds of importing torch
    from common.processes import die_with_parent

    die_with_parent()

from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402

from common.knobs import parse_config
from training.config import RLConfig
from training.torchrun.events import OUTCOME, event_writer, file_hooks
from training.types import PromptRecord, RunPaths, TrainingHooks


@record  # torchrun's failure summary then carries the rank's traceback
def main(argv: list[str] | None = None) -> int:
    from common.processes import die_with_parent
    from training import distributed
    from training.backends import trainer_backends

    die_with_parent()  # a rank never outlives its torchrun agent

    (spec_path,) = argv if argv is not None else sys.argv[1:]
    spec = json.loads(Path(spec_path).read_text())
    config = parse_config(RLConfig, spec["config"])
    records = [PromptRecord(**record) for record in spec["records"]]
    paths = RunPaths(output_dir=Path(spec["output_dir"]), models_dir=Path(spec["models_dir"]))
    context = distributed.init_from_environment()
    hooks = file_hooks(Path(spec["events"]), Path(spec["stop"]), Path(spec["removals"])) if context.is_main \
        else TrainingHooks()
    try:
        outcome = trainer_backends.get(config.trainer_backend)(config, records, paths, hooks)
    finally:
        distributed.shutdown()
    if context.is_main:
        event_writer(Path(spec["events"]))(OUTCOME, outcome=dataclasses.asdict(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main())
