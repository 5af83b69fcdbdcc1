"""Regenerate the example NeXus files: ``python -m igestbench.nexus fixtures/nexus``."""

from __future__ import annotations

import argparse
import sys

from igestbench.nexus.generator import write_fixture_files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m igestbench.nexus",
        description="Write the example NeXus files (three good, two bad) into DIRECTORY.",
    )
    parser.add_argument("directory", help="where to write them, e.g. fixtures/nexus")
    args = parser.parse_args(argv)
    for path in write_fixture_files(args.directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
