"""Download benchmark files from the Hugging Face hub into the local layout the loaders read.

    python -m evaluation.datasets list [--data-dir ../shared/datasets]
    python -m evaluation.datasets fetch aime24 math500 mathvista [--data-dir data/datasets] [--overwrite]

Without --data-dir: MIRRORLAB_DATASETS_DIR, else <MIRRORLAB_DATA_DIR>/datasets (<repo>/data/datasets),
the folder the workers' evaluations read.

Without hub access (HF_HUB_OFFLINE, no network), copy the files into --data-dir instead; the error
says which ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.paths import datasets_dir_origin
from evaluation.benchmarks import HUB_SOURCES, fetch_benchmark, local_status
from evaluation.datasets import DatasetError, default_data_dir


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluation.datasets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download benchmarks from the hub into --data-dir")
    fetch.add_argument("benchmarks", nargs="+", choices=list(HUB_SOURCES), metavar="BENCHMARK",
                       help=f"one or more of: {', '.join(HUB_SOURCES)}")
    fetch.add_argument("--overwrite", action="store_true", help="replace files that are already there")
    listing = commands.add_parser("list", help="each benchmark's hub source and whether its files are in --data-dir")
    for command in (fetch, listing):
        command.add_argument("--data-dir", type=Path, default=None,
                             help="benchmark files in the layout of shared/datasets (default: "
                                  "$MIRRORLAB_DATASETS_DIR, else <data dir>/datasets, as the workers)")
    return parser


def chosen_data_dir(given: Path | None) -> tuple[Path, str]:
    """(the datasets folder, where it came from): --data-dir, else the workers' setting or its default."""
    if given is not None:
        return given, "--data-dir"
    return default_data_dir(), datasets_dir_origin()


def print_listing(data_dir: Path, origin: str) -> None:
    """A header naming the folder and where it came from, then one line per benchmark: name, hub source, status."""
    print(f"{'benchmark':<14} {'hub source':<84} local files in {data_dir} ({origin})")
    for name, source in HUB_SOURCES.items():
        print(f"{name:<14} {source.describe():<84} {local_status(name, data_dir)}")


def fetch_all(names: list[str], data_dir: Path, overwrite: bool) -> int:
    """Fetch each benchmark in turn; print what was written, or the error. 1 when any failed."""
    failed = []
    for name in dict.fromkeys(names):
        print(f"{name}: fetching {HUB_SOURCES[name].describe()} ...", file=sys.stderr, flush=True)
        try:
            written = fetch_benchmark(name, data_dir, overwrite=overwrite)
        except DatasetError as error:  # HubUnavailable, BenchmarkFilesExist, a record the loader refuses
            print(f"error: {error}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        except OSError as error:  # writing under --data-dir failed (permissions, disk full); nothing was left behind
            print(f"error: {name}: cannot write under {data_dir}: {error}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        shown = written if len(written) <= 3 else [*written[-1:], f"... and {len(written) - 1} more files"]
        print(f"{name}: wrote {len(written)} file(s): {', '.join(str(path) for path in shown)}", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    data_dir, origin = chosen_data_dir(args.data_dir)
    if args.command == "list":
        print_listing(data_dir, origin)
        return 0
    print(f"datasets folder: {data_dir} ({origin})", file=sys.stderr, flush=True)
    return fetch_all(args.benchmarks, data_dir, args.overwrite)


if __name__ == "__main__":
    sys.exit(main())
