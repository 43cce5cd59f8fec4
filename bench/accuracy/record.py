"""Records the benchmark's cells: each job runs under libperftracker.so at the library's defaults
(matrix.json's library_env adds only ring sizes), and its rings, the job's own step times and
the cell are kept as one archive, STORE/<cell id>.tgz, written atomically. A cell whose archive
exists is skipped, so a run can stop anywhere and resume; a job that fails leaves its log in
STORE/failed/ and the run goes on.

On a machine of two cores a job's step depends on what else runs there: each archive keeps the
share of the machine's CPUs that other processes took while it ran (others_cpu_share), so that
a step measured beside a build is not taken for the truth of a what-if (score.py).
"""

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "scenarios"))
import jobs  # noqa: E402
from scenarios import Scenario  # noqa: E402

TRAIN_LM = os.path.join(HERE, "jobs", "train_lm.py")


def default_store():
    return os.environ.get("PERFTRACKER_BENCH_DIR",
                          os.path.join(os.path.expanduser("~"), ".cache", "perftracker",
                                       "accuracy"))


def archive_path(store, cell_id):
    return os.path.join(store, cell_id + ".tgz")


def recorded_as(store, cell_id):
    """The cell an archive was recorded as (its meta.json), or None when there is none."""
    try:
        with tarfile.open(archive_path(store, cell_id)) as tar:
            return json.load(tar.extractfile("meta.json"))["cell"]
    except (OSError, KeyError, ValueError, tarfile.TarError):
        return None


def current(store, cell):
    """Whether the cell's archive was recorded with the job the matrix now describes: an archive
    of other arguments or settings (the matrix changed since) is not this cell any more."""
    was = recorded_as(store, cell.id)
    return was is not None and was["args"] == cell.args and was["env"] == cell.env


def commit():
    p = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return p.stdout.strip() + ("+dirty" if dirty else "")


def scenario_of(cell, ranks, steps_prefix):
    env = dict(cell.env)
    args = list(cell.args)
    if cell.job == "sim_train":
        env["SIM_TRAIN_STEP_TIMES"] = steps_prefix
        job, script = "sim_train", ""
    else:
        args += ["--step-times", steps_prefix]
        job, script = "torch_ddp", TRAIN_LM
    library = {k: v for k, v in env.items() if k.startswith("PERFTRACKER_")}
    return Scenario(cell.id, cell.id, job, ranks, args,
                    {k: v for k, v in env.items() if k not in library}, nodes=cell.nodes,
                    script=script, preload_env=library)


def step_times(prefix, ranks):
    out = {}
    for r in range(ranks):
        try:
            with open(f"{prefix}.rank{r}.json") as f:
                out[str(r)] = json.load(f)["ends_s"]
        except (OSError, ValueError, KeyError):
            pass
    return out


def busy_cpu_s():
    """Seconds of CPU time the whole machine has spent busy (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def others_share(busy0, own0, wall):
    """The share of the machine's CPUs that processes other than the job (and this recorder)
    took over `wall` seconds, from counters read before it; None when unknown."""
    busy1 = busy_cpu_s()
    if busy0 is None or busy1 is None or wall <= 0:
        return None
    own = children_cpu_s() - own0 + time.process_time()
    return round(max(0.0, busy1 - busy0 - own) / (wall * (os.cpu_count() or 1)), 3)


def machine():
    """What a recorded step measures beside the job: the machine's CPU model and how many CPUs.
    A step on one machine is no twin for a job on another: the clean torch_model step was
    0.205-0.216 s on the machines of 2026-11-29 to 12-01 and 0.091-0.113 s on the AMD EPYC
    (family 26) of 2026-12-02, the same job and library."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first CPU's block: every CPU of a machine is the same model
                k, _, v = line.partition(":")
                if k.strip() in ("model name", "cpu family", "model", "CPU implementer",
                                 "CPU part"):
                    info[k.strip()] = v.strip()
    except OSError:
        pass
    cpus = os.cpu_count() or 0
    model = info.get("model name") or (f"{platform.machine()} implementer "
                                       f"{info.get('CPU implementer', '?')} part "
                                       f"{info.get('CPU part', '?')}")
    family = f" (family {info['cpu family']}, model {info.get('model', '?')})" \
        if "cpu family" in info else ""
    return {"key": f"{model}{family}, {cpus} CPUs", "cpus": cpus, **info}


def record_one(cell, tools, store, ranks, timeout_s):
    """Runs one cell; returns (ok, seconds, what happened)."""
    t0 = time.monotonic()
    busy0, own0 = busy_cpu_s(), children_cpu_s() + time.process_time()
    work = tempfile.mkdtemp(prefix="perftracker-bench.")
    try:
        prefix = os.path.join(work, "steps")
        s = scenario_of(cell, ranks, prefix)
        rc, how = jobs.run(s, tools, work, timeout_s=timeout_s)
        wall = time.monotonic() - t0
        others = others_share(busy0, own0, wall)
        if how != "exited" or rc != 0:
            os.makedirs(os.path.join(store, "failed"), exist_ok=True)
            shutil.copy(os.path.join(work, "job.log"),
                        os.path.join(store, "failed", cell.id + ".log"))
            return False, wall, f"job {how} (exit {rc}); log in {store}/failed/{cell.id}.log"
        meta = {"schema": 1, "cell": asdict(cell), "commit": commit(),
                "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "wall_s": round(wall, 1), "load1": os.getloadavg()[0],
                "others_cpu_share": others, "machine": machine(),
                "step_times": step_times(prefix, ranks)}
        with open(os.path.join(work, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        tmp = archive_path(store, cell.id) + ".tmp"
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(os.path.join(work, "meta.json"), "meta.json")
            tar.add(os.path.join(work, cell.id), "rings")
        os.replace(tmp, archive_path(store, cell.id))
        return True, wall, "ok"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def progress(done, total, ok, failed, started, current):
    elapsed = time.monotonic() - started
    eta = elapsed / done * (total - done) if done else 0
    width = 30
    filled = int(width * done / total) if total else width
    line = (f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} ok {ok} failed {failed} "
            f"elapsed {elapsed / 60:.0f} min eta {eta / 60:.0f} min  {current[:48]:48}")
    sys.stderr.write(line if sys.stderr.isatty() else line.strip("\r") + "\n")
    sys.stderr.flush()


def record(cells, tools, store, ranks, jobs_n=1, timeout_s=600, limit=0):
    os.makedirs(store, exist_ok=True)
    todo = [c for c in cells if not current(store, c)]
    done = len(cells) - len(todo)
    if limit:
        todo = todo[:limit]
    print(f"record: {done} of {len(cells)} chosen cells already recorded in {store}; "
          f"{len(todo)} to run", file=sys.stderr)
    started = time.monotonic()
    ok = failed = 0
    if jobs_n <= 1:
        for i, c in enumerate(todo):
            progress(i, len(todo), ok, failed, started, c.id)
            good, wall, what = record_one(c, tools, store, ranks, timeout_s)
            ok, failed = ok + good, failed + (not good)
            if not good:
                print(f"\nrecord: {c.id}: {what}", file=sys.stderr)
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(jobs_n) as pool:
            futures = {pool.submit(record_one, c, tools, store, ranks, timeout_s): c for c in todo}
            for i, fut in enumerate(futures):
                good, wall, what = fut.result()
                ok, failed = ok + good, failed + (not good)
                progress(i + 1, len(todo), ok, failed, started, futures[fut].id)
                if not good:
                    print(f"\nrecord: {futures[fut].id}: {what}", file=sys.stderr)
    progress(len(todo), len(todo), ok, failed, started, "done")
    sys.stderr.write("\n")
    return failed == 0
