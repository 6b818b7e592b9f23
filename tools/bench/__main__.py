"""``python -m tools.bench data|run``: the benchmark's two commands, run from the repository's
root with ``DATABASE_URL`` naming the benchmark's database (the Makefile's ``bench-data`` and
``bench`` targets)."""

from __future__ import annotations

import os
import sys

import django

USAGE = """usage: python -m tools.bench {data,run} [options]

  data  build a dataset of --scale N memories (make bench-data; --replace, --seed S)
  run   measure every path beside its floor into docs/benchmarks.md (make bench)

python -m tools.bench data --help (or run --help) lists a command's options."""


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("data", "run"):
        asked = bool(argv) and argv[0] in ("-h", "--help")
        print(USAGE, file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    django.setup()
    # The commands import the ledger's models, which need the app registry set up above.
    from tools.bench.commands import COMMANDS

    COMMANDS[argv[0]]().run_from_argv(["python -m tools.bench", *argv])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
