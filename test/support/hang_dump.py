"""Hangs leave evidence: before a test kills a job that ran out of time, the native stacks of
every process of the job (gdb, all threads) and their Python stacks (faulthandler, which the
job's environment enables: PYTHONFAULTHANDLER=1 makes SIGABRT print every thread's traceback)
go into the test log.

  run(cmd, env=..., timeout=S)   subprocess.run-like; on timeout dumps, kills, returns rc -9
  dump_and_kill(pid)             the same for a running process tree
  descendants(pid)               every process below pid (torchrun's ranks are its children)
"""
import os
import shutil
import signal
import subprocess
import sys
import time


def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def dump_stacks(pids, out=sys.stdout):
    """Native stacks of every thread of each process, through gdb when it is installed."""
    gdb = shutil.which("gdb")
    for pid in pids:
        print(f"=== hang: stacks of pid {pid}: {_cmdline(pid)[:300]}", file=out, flush=True)
        if gdb is None:
            print("(gdb is not installed: no native stacks)", file=out, flush=True)
            continue
        try:
            p = subprocess.run([gdb, "-batch", "-nx", "-p", str(pid), "-ex", "thread apply all bt"],
                               capture_output=True, text=True, timeout=60)
            text = p.stdout
        except subprocess.TimeoutExpired:
            text = "(gdb did not finish within 60 s)"
        lines = [l for l in text.splitlines() if l.startswith(("Thread ", "#"))]
        print("\n".join(lines) or text[-4000:], file=out, flush=True)


def dump_and_kill(pid, out=sys.stdout):
    """Dumps the stacks of `pid` and its descendants, asks Python for its tracebacks (SIGABRT,
    with faulthandler on), then SIGKILLs whatever is left."""
    pids = [pid] + descendants(pid)
    dump_stacks(pids, out)
    for p in pids:
        try:
            os.kill(p, signal.SIGABRT)
        except ProcessLookupError:
            pass
    time.sleep(1.0)
    for p in [pid] + descendants(pid) + pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def with_faulthandler(env):
    env = dict(os.environ if env is None else env)
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def run(cmd, env=None, timeout=600, **kwargs):
    """subprocess.run(cmd, capture_output=True, text=True) that, on timeout, dumps the job's
    stacks into the log and kills it (returncode -9) instead of raising."""
    proc = subprocess.Popen(cmd, env=with_faulthandler(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"=== hang: {cmd[:4]}... still running after {timeout} s", flush=True)
        dump_and_kill(proc.pid)
        stdout, stderr = proc.communicate()
        print(f"=== hang: the job's stderr (Python tracebacks from faulthandler)\n"
              f"{(stderr or '')[-20000:]}", flush=True)
        return subprocess.CompletedProcess(cmd, -9, stdout, stderr)
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
