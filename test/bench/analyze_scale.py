#!/usr/bin/env python3
"""perftracker analyze at cluster scale (issue 17): generate, analyze, print the figures.

  analyze_scale.py --build BUILD [--ranks 64,256,1024] [--huge] [--windows 120] [--jobs N]
                   [--keep DIR] [--reduced NODES]

For each rank count: perftracker-gen writes RANKS x WINDOWS windows of a job at the generator's
defaults (2,000 functions, 50 collectives, 20 iterations a window) with one slow GPU (rank
RANKS/3, 1.3x) into rings large enough to hold every window (10 MiB for 120), then
`perftracker analyze` reads them four times. Printed per size: generation seconds (wall, CPU),
the first analysis's seconds (right after the writes), then the median of the other three:
seconds (wall, CPU), peak RSS (MiB), windows analyzed per (wall) second, and whether the slow
rank is named first (it must be, at every size). --huge adds 16,384 ranks (160 GiB of ring files for 120 windows).
Targets (issue 17, 2 cores): 1,024 x 120 analyzed in <= 10 s and <= 2 GiB; 16,384 x 120 in
<= 3 min and <= 8 GiB; 1,024 x 120 generated in <= 2 min.
--reduced NODES: the cluster path instead (issue 17 item 3): NODES nodes of 8 ranks, written a
slice of hosts at a time (perftracker-gen --hosts), each node reduced (`perftracker reduce`) and
its rings deleted, then `analyze` on the reduced files. With --keep, a directory that already
holds the NODES reduced files is analyzed again without generating them (2,048 nodes, 16,384
ranks, take about 45 minutes to make on 2 cores). Printed: reduce seconds and bytes per
node, analyze seconds, CPU, peak RSS; and the bytes one node gathers per hour of training (8
ranks, the windows of one hour at the generator's step time, reduced).
Not a test: it takes minutes and needs gigabytes of scratch space (TMPDIR or --keep).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def run_measured(cmd):
    """(wall seconds, CPU seconds, peak RSS MiB, stdout) of one command run to completion; exits
    on failure. CPU seconds (user + system) tell what the wall time would be on idle cores when
    the machine is shared."""
    # Output goes to files, not pipes: a report larger than a pipe's buffer would block the
    # child while we wait for it (os.wait4, for its rusage).
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out_file, stderr=err_file, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"analyze_scale: {' '.join(cmd)} exited {code}: {err.strip()}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, usage.ru_maxrss / 1024.0, out  # ru_maxrss is in KiB on Linux


def ring_mb(windows):
    """A ring that holds every window: ~75 KB each at the generator's defaults (4 MiB, the
    generator's default ring, holds only 55 of them)."""
    return max(4, (windows * 80 + 1023) // 1024 + 1)


def measure(build, ranks, windows, jobs, scratch):
    perftracker = os.path.join(build, "analyzer", "perftracker")
    slow = ranks // 3
    out_dir = os.path.join(scratch, f"ranks-{ranks}")
    shutil.rmtree(out_dir, ignore_errors=True)
    jobs_args = ["--jobs", str(jobs)] if jobs else []
    gen_s, gen_cpu, _, _ = run_measured(gen_cmd(build, out_dir, ranks, windows, slow, jobs_args))
    # The first analysis follows the generator's writes (the kernel still writing them back, or
    # evicting older files); the figure is the median of three more, from the page cache.
    runs = [run_measured([perftracker, "analyze", out_dir, "--json", "-", "--top", "3"] + jobs_args)
            for _ in range(4)]
    first_s = runs[0][0]
    analyze_s, analyze_cpu, rss_mib, report = sorted(runs[1:], key=lambda r: r[0])[1]
    first = json.loads(report)["candidates"][0]["rank_set"] if report else []
    shutil.rmtree(out_dir, ignore_errors=True)
    return {"ranks": ranks, "windows": windows, "gen_s": gen_s, "gen_cpu": gen_cpu,
            "first_s": first_s, "analyze_s": analyze_s, "analyze_cpu": analyze_cpu,
            "rss_mib": rss_mib, "windows_per_s": ranks * windows / analyze_s,
            "slow_first": first == [slow]}


def gen_cmd(build, out_dir, ranks, windows, slow, jobs_args, extra=()):
    return [os.path.join(build, "tools", "perftracker-gen"), "--dir", out_dir, "--ranks",
            str(ranks), "--windows", str(windows), "--slow-rank", str(slow), "--slow-factor", "1.3",
            "--ring-mb", str(ring_mb(windows))] + jobs_args + list(extra)


def measure_reduced(build, nodes, windows, jobs, scratch, keep, slice_hosts=16):
    """Generates NODES x 8 ranks a slice of hosts at a time, reduces each node, then analyzes."""
    perftracker = os.path.join(build, "analyzer", "perftracker")
    ranks = nodes * 8
    slow = ranks // 3
    jobs_args = ["--jobs", str(jobs)] if jobs else []
    raw = os.path.join(scratch, "raw")
    gathered = os.path.join(scratch, f"reduced-{nodes}")
    reduce_s = reduce_cpu = 0.0
    # A kept directory that holds every node already is analyzed again as it is (generating
    # 16,384 ranks takes most of an hour on 2 cores).
    reuse = keep and os.path.isdir(gathered) and \
        sum(f.endswith(".ptrd") for f in os.listdir(gathered)) == nodes
    if reuse:
        print(f"reusing the {nodes} reduced files in {gathered}", flush=True)
    else:
        shutil.rmtree(gathered, ignore_errors=True)
        os.makedirs(gathered)
    for first in range(0, 0 if reuse else nodes, slice_hosts):
        shutil.rmtree(raw, ignore_errors=True)
        run_measured(gen_cmd(build, raw, ranks, windows, slow, jobs_args,
                             ["--ranks-per-host", "8", "--hosts",
                              f"{first}:{min(nodes, first + slice_hosts)}"]))
        for host in sorted(os.listdir(os.path.join(raw, "synthetic"))):
            s, cpu, _, _ = run_measured([perftracker, "reduce", os.path.join(raw, "synthetic", host),
                                         "-o", os.path.join(gathered, host + ".ptrd")] + jobs_args)
            reduce_s += s
            reduce_cpu += cpu
    shutil.rmtree(raw, ignore_errors=True)
    node_bytes = sum(os.path.getsize(os.path.join(gathered, f)) for f in os.listdir(gathered))
    analyze_s, analyze_cpu, rss_mib, report = run_measured(
        [perftracker, "analyze", gathered, "--json", "-", "--top", "3"] + jobs_args)
    first = json.loads(report)["candidates"][0]["rank_set"] if report else []
    if not keep:
        shutil.rmtree(gathered, ignore_errors=True)
    return {"nodes": nodes, "ranks": ranks, "reduce_s": None if reuse else reduce_s / nodes,
            "reduce_cpu": None if reuse else reduce_cpu / nodes, "node_kb": node_bytes / nodes / 1024,
            "analyze_s": analyze_s, "analyze_cpu": analyze_cpu, "rss_mib": rss_mib,
            "slow_first": first == [slow]}


def hourly_bytes(build, scratch, jobs):
    """Bytes one node of 8 ranks gathers for an hour of training: the generator's windows of 20
    iterations at its ~574 ms step are 11.5 s long, 313 to the hour."""
    windows = 313
    raw = os.path.join(scratch, "hour")
    shutil.rmtree(raw, ignore_errors=True)
    jobs_args = ["--jobs", str(jobs)] if jobs else []
    run_measured(gen_cmd(build, raw, 8, windows, 3, jobs_args, ["--ranks-per-host", "8"]))
    rings = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(raw) for f in fs)
    out = os.path.join(scratch, "hour.ptrd")
    run_measured([os.path.join(build, "analyzer", "perftracker"), "reduce", raw, "-o", out])
    reduced = os.path.getsize(out)
    shutil.rmtree(raw, ignore_errors=True)
    os.remove(out)
    return rings, reduced


def main_reduced(args, scratch):
    rings, reduced = hourly_bytes(args.build, scratch, args.jobs)
    print(f"one node (8 ranks), one hour (313 windows): ring files {rings / 2**20:.1f} MiB, "
          f"reduced {reduced / 2**20:.2f} MiB to gather", flush=True)
    m = measure_reduced(args.build, args.reduced, args.windows, args.jobs, scratch, args.keep)
    print(f"{'nodes':>6} {'ranks':>6} {'reduce s/node':>13} {'cpu s/node':>10} {'KiB/node':>9} "
          f"{'analyze s':>9} {'cpu s':>7} {'peak MiB':>9} slow rank first")
    reduce_s = "-" if m["reduce_s"] is None else f"{m['reduce_s']:.2f}"
    reduce_cpu = "-" if m["reduce_cpu"] is None else f"{m['reduce_cpu']:.2f}"
    print(f"{m['nodes']:>6} {m['ranks']:>6} {reduce_s:>13} {reduce_cpu:>10} "
          f"{m['node_kb']:>9.0f} {m['analyze_s']:>9.2f} {m['analyze_cpu']:>7.2f} "
          f"{m['rss_mib']:>9.0f} {'yes' if m['slow_first'] else 'NO'}", flush=True)
    return 0 if m["slow_first"] else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="CMake build directory")
    parser.add_argument("--ranks", default="64,256,1024", help="comma-separated rank counts")
    parser.add_argument("--huge", action="store_true", help="also 16,384 ranks")
    parser.add_argument("--windows", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=0, help="threads for both (default: cores)")
    parser.add_argument("--keep", help="scratch directory (default: a temporary one)")
    parser.add_argument("--reduced", type=int, metavar="NODES",
                        help="the reduce path: NODES nodes of 8 ranks, reduced, then analyzed")
    args = parser.parse_args()
    sizes = [int(r) for r in args.ranks.split(",") if r]
    if args.huge:
        sizes.append(16384)
    scratch = args.keep or tempfile.mkdtemp(prefix="analyze-scale-")
    os.makedirs(scratch, exist_ok=True)
    if args.reduced:
        try:
            return main_reduced(args, scratch)
        finally:
            if not args.keep:
                shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'ranks':>6} {'windows':>7} {'gen s':>8} {'gen cpu s':>9} {'first s':>8} "
          f"{'analyze s':>9} {'cpu s':>7} {'peak MiB':>9} {'windows/s':>10} slow rank first")
    ok = True
    try:
        for ranks in sizes:
            m = measure(args.build, ranks, args.windows, args.jobs, scratch)
            ok &= m["slow_first"]
            print(f"{m['ranks']:>6} {m['windows']:>7} {m['gen_s']:>8.1f} {m['gen_cpu']:>9.1f} "
                  f"{m['first_s']:>8.2f} {m['analyze_s']:>9.2f} {m['analyze_cpu']:>7.2f} {m['rss_mib']:>9.0f} "
                  f"{m['windows_per_s']:>10.0f} "
                  f"{'yes' if m['slow_first'] else 'NO'}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
