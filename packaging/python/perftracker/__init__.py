"""perftracker, as installed from its wheel: the native CLI and libperftracker.so live inside
this package (bin/ and lib/ beside this file), so `perftracker run` finds the library as it does
in any install (../lib from the binary)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.path.join(HERE, "bin")
LIBRARY = os.path.join(HERE, "lib", "libperftracker.so")


def binary(name="perftracker"):
    """The path of one of the package's programs: perftracker, perftracker-gen."""
    return os.path.join(BIN_DIR, name)
