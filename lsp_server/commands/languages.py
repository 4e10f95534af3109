"""`infill languages` (being built; see the issue tracker)."""

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    print("infill languages: not available yet in this build", file=sys.stderr)
    return 2
