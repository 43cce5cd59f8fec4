"""The two verdicts of the Python test programs: a failure is one line, FAIL: and why, then exit 1
(ctest reads the exit status; the line is what a person reads in the log)."""
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)
