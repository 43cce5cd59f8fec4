#!/usr/bin/env python3
"""The diagnosis benchmark (bench/accuracy/README.md).

  bench.py list   [--cells REGEX[,REGEX]] [--store DIR]      the cells, and which are recorded
  bench.py record --build BUILD [--cells ...] [--jobs N] [--limit N]
                                                              run and archive the missing cells
  bench.py score  --build BUILD [--cells ...] [--out DIR] [--jobs N]
                                                              re-analyze the archives, scoreboard
  bench.py live   --build BUILD                               watch beside jobs whose fault begins
                                                              mid-run (matrix.json "live")
  bench.py ci     --build BUILD [--update-floor]              the CI subset against its floor
  bench.py pack-ci --build BUILD                              the CI subset's archives, reduced
"""

import argparse
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import matrix  # noqa: E402
import live  # noqa: E402
import record  # noqa: E402
import score  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("command", choices=("list", "record", "score", "live", "ci", "pack-ci"))
    ap.add_argument("--build", help="CMake build directory (the library, the CLI, simgpu)")
    ap.add_argument("--cells", default="", help="comma-separated regexes of cell ids")
    ap.add_argument("--store", default=record.default_store(),
                    help="where archives are kept (default $PERFTRACKER_BENCH_DIR or "
                         "~/.cache/perftracker/accuracy)")
    ap.add_argument("--jobs", type=int, default=0,
                    help="record: jobs at once (default 1); score: analyses at once "
                         "(default: every core)")
    ap.add_argument("--limit", type=int, default=0, help="record: at most this many new cells")
    ap.add_argument("--timeout", type=int, default=900, help="record: seconds a job may take")
    ap.add_argument("--update-floor", action="store_true",
                    help="ci: write today's figures as the floor")
    ap.add_argument("--out", default=os.path.join(HERE),
                    help="score: where SCOREBOARD.md and scoreboard.json go")
    args = ap.parse_args()

    m = matrix.load()
    chosen = matrix.select(matrix.breadth_order(matrix.cells(m), m), args.cells)
    if args.command == "list":
        n = 0
        for c in chosen:
            ok = record.current(args.store, c)
            n += ok
            stale = not ok and os.path.exists(record.archive_path(args.store, c.id))
            print(f"{c.id:50} {'recorded' if ok else 'stale' if stale else '-'}")
        print(f"{len(chosen)} cells, {n} recorded in {args.store}")
        return 0
    if not args.build:
        ap.error(f"{args.command} needs --build")
    tools = record.jobs.Tools(args.build)
    for path in (tools.cli, tools.lib) if args.command in ("record", "live") else (tools.cli,):
        if not os.path.exists(path):
            sys.exit(f"bench: {path} is missing: build the library and the CLI first")
    if args.command == "record":
        # A stop (kill, a session's end) ends the job being recorded too: see jobs.run_job.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit("record: stopped"))
        ok = record.record(chosen, tools, args.store, m["ranks"], args.jobs or 1, args.timeout,
                           args.limit)
        return 0 if ok else 1
    if args.command == "score":
        board = score.score(chosen, m, tools, args.store, args.jobs or os.cpu_count())
        score.write(board, args.out)
        print(score.text(board))
        return 0
    if args.command == "live":
        for spec in m["live"]:
            result = live.run_live(m, spec, tools, args.store, m["ranks"])
            print(live.judge_live(result))
        return 0
    if args.command == "pack-ci":
        score.pack_ci(m, tools, args.store)
        return 0
    return score.ci(m, tools, args.jobs or os.cpu_count(), args.update_floor)


if __name__ == "__main__":
    sys.exit(main())
