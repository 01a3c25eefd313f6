"""The logging flags the bridge's commands share: ``--log-level``, ``--debug`` and
``--log-file``, and the level they ask for."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["log_level", "logging_arguments"]


def logging_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser.add_argument(
        "--debug", action="store_true", help="log at DEBUG, with every API call and its duration"
    )
    parser.add_argument("--log-file", type=Path, help="log here instead of stderr")


def log_level(args: argparse.Namespace) -> str:
    return "DEBUG" if args.debug else str(args.log_level)
