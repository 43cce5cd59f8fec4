"""`perftracker ...` and `python -m perftracker ...`: the packaged native CLI, exec'd in place
(same pid, signals and exit status as the binary's own)."""
import os
import sys

from perftracker import binary


def _exec(name):
    path = binary(name)
    try:
        os.execv(path, [path, *sys.argv[1:]])
    except OSError as e:
        sys.exit(f"perftracker: cannot run {path}: {e.strerror}")


def main():
    _exec("perftracker")


def gen():
    _exec("perftracker-gen")


if __name__ == "__main__":
    main()
