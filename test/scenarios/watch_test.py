"""perftracker watch on a running simgpu job (issue 19 item 2).

  fault: rank 3's GPU is throttled (x1.3); `watch --json-lines --interval 1` must name rank 3 as
         a candidate while the job still runs; SIGTERM ends watch with exit 0, and the
         --prometheus file it kept rewriting parses under a strict text-format parser.
  hang:  rank 3 stops before NCCL op 40; `watch --exit-on hang --interval 1` reports the hang,
         with rank 3 as the one that never arrived, as soon as the analyzer's hang rule holds
         (one interval and a window of slack, plus a margin for a loaded machine), and exits 3.

Assertions are on order (the candidate before the job's end, the hang before watch's exit),
with generous timeouts, never on tight timings.

  watch_test.py --build BUILD_DIR fault|hang|both
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import jobs  # noqa: E402

NPROC = 4  # light on a shared 2-core machine; enough peers for the median + MAD rule
DP = ["--layers", "4", "--seq", "2048", "--log-every", "5"]
INTERVAL_S = 1
EXIT_HANG = 3  # perftracker watch --exit-on hang (analyzer/commands/cli.h kExitHang)


# --- a strict parser of the Prometheus text exposition format (0.0.4) -----------------------

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class ParseError(Exception):
    pass


def parse_value(text, where):
    if text in ("NaN", "+Inf", "-Inf", "Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not FLOAT.match(text):
        raise ParseError(f"{where}: bad value {text!r}")
    return float(text)


def check_help_escapes(doc, where):
    """HELP text escapes only backslash and line feed."""
    i = 0
    while i < len(doc):
        if doc[i] == "\\":
            if doc[i + 1:i + 2] not in ("\\", "n"):
                raise ParseError(f"{where}: bad escape in HELP")
            i += 2
        else:
            i += 1


def parse_labels(text, where):
    """text: what is between the braces. Returns [(name, value)]."""
    labels, i = [], 0
    while i < len(text):
        m = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*").match(text, i)
        if not m:
            raise ParseError(f"{where}: bad label name at {text[i:]!r}")
        name, i = m.group(0), m.end()
        if name.startswith("__"):
            raise ParseError(f"{where}: reserved label name {name}")
        if text[i:i + 2] != '="':
            raise ParseError(f"{where}: expected =\" after {name}")
        i += 2
        value = []
        while True:
            if i >= len(text):
                raise ParseError(f"{where}: unterminated value of {name}")
            c = text[i]
            if c == "\\":
                esc = text[i + 1:i + 2]
                if esc not in ("\\", '"', "n"):
                    raise ParseError(f"{where}: bad escape \\{esc} in {name}")
                value.append({"\\": "\\", '"': '"', "n": "\n"}[esc])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise ParseError(f"{where}: raw line feed in {name}")
            else:
                value.append(c)
                i += 1
        labels.append((name, "".join(value)))
        if i < len(text):
            if text[i] != ",":
                raise ParseError(f"{where}: expected , after {name}")
            i += 1
    names = [n for n, _ in labels]
    if len(set(names)) != len(names):
        raise ParseError(f"{where}: a label twice")
    return labels


def split_sample(line, where):
    """'name{labels} value [ts]' -> (name, labels text, rest)."""
    m = re.match(r"([^\s{]+)", line)
    if not m:
        raise ParseError(f"{where}: no metric name")
    name, i = m.group(1), m.end()
    labels = ""
    if i < len(line) and line[i] == "{":
        j, in_value = i + 1, False  # the closing brace outside a quoted value
        while j < len(line):
            c = line[j]
            if in_value and c == "\\":
                j += 2
                continue
            if c == '"':
                in_value = not in_value
            elif c == "}" and not in_value:
                break
            j += 1
        if j >= len(line):
            raise ParseError(f"{where}: unterminated label set")
        labels, i = line[i + 1:j], j + 1
    return name, labels, line[i:]


def parse_prometheus(data):
    """Bytes of a text-format file -> {(name, frozenset(labels)): value}; ParseError on any
    deviation from the format."""
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise ParseError(f"not UTF-8: {e}")
    if text and not text.endswith("\n"):
        raise ParseError("the last line has no line feed")
    helped, typed, seen, done = set(), {}, {}, set()
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = f"line {n}"
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not METRIC_NAME.match(name):
                    raise ParseError(f"{where}: bad metric name {name!r}")
                if name in seen.get("families", set()) or name in done:
                    raise ParseError(f"{where}: {parts[1]} of {name} after its samples")
                if parts[1] == "HELP":
                    if name in helped:
                        raise ParseError(f"{where}: second HELP for {name}")
                    helped.add(name)
                    doc = parts[3] if len(parts) > 3 else ""
                    check_help_escapes(doc, where)
                else:
                    if name in typed:
                        raise ParseError(f"{where}: second TYPE for {name}")
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise ParseError(f"{where}: bad TYPE line")
                    typed[name] = parts[3]
            continue
        name, labels_text, rest = split_sample(line, where)
        if not METRIC_NAME.match(name):
            raise ParseError(f"{where}: bad metric name {name!r}")
        if name not in typed or name not in helped:
            raise ParseError(f"{where}: sample of {name} without HELP and TYPE before it")
        if current != name:
            if name in done:
                raise ParseError(f"{where}: samples of {name} not grouped together")
            if current is not None:
                done.add(current)
            current = name
        fields = rest.split(" ")
        if fields[0] != "" or len(fields) not in (2, 3):
            raise ParseError(f"{where}: expected ' value [timestamp]' after the labels")
        value = parse_value(fields[1], where)
        if len(fields) == 3 and not re.match(r"-?\d+\Z", fields[2]):
            raise ParseError(f"{where}: bad timestamp")
        labels = parse_labels(labels_text, where)
        key = (name, frozenset(labels))
        if key in seen:
            raise ParseError(f"{where}: duplicate series {name}{{{labels_text}}}")
        seen[key] = value
    return seen


def check_parser():
    """The parser rejects what it must (so a pass below means something)."""
    good = b'# HELP m a \\\\ b\n# TYPE m gauge\nm{a="x\\"y\\n",b="2"} 1.5e3\nm 2\n'
    assert parse_prometheus(good)[("m", frozenset({("a", 'x"y\n'), ("b", "2")}))] == 1500
    bad = [b"m 1\n",                                            # no HELP/TYPE
           b"# HELP m x\n# TYPE m gauge\nm{a=\"\\t\"} 1\n",       # bad escape
           b"# HELP m x\n# TYPE m gauge\nm 1\nm 2\n",             # duplicate series
           b"# HELP m x\n# TYPE m gauge\nm one\n",                # not a float
           b"# HELP 1m x\n# TYPE 1m gauge\n1m 1\n",               # bad name
           b"# HELP m x\n# TYPE m gauge\nm{a=\"\xff\"} 1\n",      # not UTF-8
           b"# HELP m x\n# TYPE m gauge\nm 1"]                     # no final line feed
    for b in bad:
        try:
            parse_prometheus(b)
        except ParseError:
            continue
        raise AssertionError(f"the parser accepted {b!r}")


# --- the jobs ----------------------------------------------------------------------------------

class Watch:
    """perftracker watch in the background, its JSON lines collected with the job's state at the
    moment each was read."""

    def __init__(self, tools, job_dir, extra, job):
        self.proc = subprocess.Popen(
            [tools.cli, "watch", job_dir, "--json-lines", "--interval", str(INTERVAL_S)] + extra,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events = []  # (event, job still running, monotonic time read)
        self.cond = threading.Condition()
        self.job = job

        def read():
            for line in self.proc.stdout:
                event = json.loads(line)
                with self.cond:
                    self.events.append((event, self.job.poll() is None, time.monotonic()))
                    self.cond.notify_all()
            with self.cond:
                self.cond.notify_all()
        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()

    def wait_for(self, pred, timeout_s):
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while True:
                for e in self.events:
                    if pred(e[0]):
                        return e
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    return None
                self.cond.wait(min(left, 1.0))

    def log(self):
        return "\n".join(json.dumps(e[0]) for e in self.events)


def start_job(tools, out_dir, name, fault_env, args):
    env = jobs.job_env(tools, out_dir, name, fault_env, simgpu=True)
    log = open(os.path.join(out_dir, "job.log"), "w")
    proc = subprocess.Popen(jobs.sim_train_command(tools, NPROC, args), env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    return proc


def case_fault(tools, root):
    out_dir = os.path.join(root, "fault")
    os.makedirs(out_dir)
    job = start_job(tools, out_dir, "watch-fault", {"SIMGPU_COMPUTE_SLOWDOWN": "3=1.3"},
                    ["--iters", "200"] + DP)
    prom = os.path.join(out_dir, "perftracker.prom")
    watch = Watch(tools, out_dir, ["--prometheus", prom], job)
    try:
        hit = watch.wait_for(lambda e: e["type"] in ("candidate_appeared", "candidate_changed")
                             and e["rank_set"] == [3] and e["category"] == "gpu_compute",
                             timeout_s=150)
        assert hit is not None, f"watch never named rank 3; job rc {job.poll()}; events:\n" + \
            watch.log() + "\nstderr: " + (watch.proc.stderr.read() if watch.proc.poll() else "")
        event, running, _ = hit
        assert running, f"rank 3 was named only after the job ended: {event}"
        print(f"fault: named while the job ran: {json.dumps(event)}")
        assert watch.proc.poll() is None, "watch ended by itself"
        watch.proc.send_signal(signal.SIGTERM)
        rc = watch.proc.wait(timeout=60)
        assert rc == 0, f"watch exited {rc} on SIGTERM"
    finally:
        jobs.kill_tree(job)
        if watch.proc.poll() is None:
            watch.proc.kill()
    with open(prom, "rb") as f:
        series = parse_prometheus(f.read())
    names = {name for name, _ in series}
    for want in ("perftracker_step_seconds", "perftracker_candidate_score", "perftracker_hang"):
        assert want in names, f"{want} missing from {prom}: {sorted(names)}"
    # The last round may be the one that first named rank 3: its newest windows can still hold
    # the job's start-up, whose rendezvous scores above the GPU for a round. Rank 3's GPU must be
    # among the exported candidates, not necessarily first.
    cands = [(dict(labels), v) for (name, labels), v in series.items()
             if name == "perftracker_candidate_score"]
    assert any(c["rank_set"] == "3" and c["category"] == "gpu_compute" and v > 0
               for c, v in cands), f"rank 3's GPU is not among the last round's candidates: {cands}"
    ranks = {dict(labels)["rank"] for name, labels in series if name == "perftracker_step_seconds"}
    assert ranks == {str(r) for r in range(NPROC)}, f"step time for ranks {ranks}"
    assert all(math.isfinite(v) and v > 0 for (name, _), v in series.items()
               if name == "perftracker_step_seconds")
    print(f"fault: {prom} parses: {len(series)} series")
    return True


def case_hang(tools, root):
    out_dir = os.path.join(root, "hang")
    os.makedirs(out_dir)
    job = start_job(tools, out_dir, "watch-hang", {"SIMGPU_HANG": "3:40"}, ["--iters", "1000"] + DP)
    watch = Watch(tools, out_dir, ["--exit-on", "hang"], job)
    try:
        rc = watch.proc.wait(timeout=150)
        watch.reader.join(timeout=10)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        if watch.proc.poll() is None:
            watch.proc.kill()
        jobs.kill_tree(job)
    hangs = [e for e, _, _ in watch.events if e["type"] == "hang"]
    assert rc == EXIT_HANG, f"watch exited {rc}, not {EXIT_HANG}; events:\n{watch.log()}"
    assert hangs, f"exit {rc} without a hang line; events:\n{watch.log()}"
    assert watch.events[-1][0]["type"] == "hang", "watch went on after the hang"
    h = hangs[0]
    assert h["ranks_missing"] == [3], f"never arrived: {h['ranks_missing']}, not [3]"
    # The analyzer calls a collective hung once it is max(10 s, 5 steps) old. The first round
    # where that holds must report it: the hang's age when reported is that, plus at most one
    # interval and one live-slot update, plus a margin for a loaded machine.
    step_s = 0.3 * 3  # a simulated ~270 ms step, up to 3x slower on a busy 2-core host
    threshold = max(10.0, 5 * step_s)
    margin = 20.0
    assert h["stuck_s"] <= threshold + INTERVAL_S + 5 * step_s + margin, \
        f"reported {h['stuck_s']:.1f} s into the hang (rule at {threshold:.0f} s)"
    print(f"hang: reported {h['stuck_s']:.1f} s into it, exit {rc}: {json.dumps(h)}")
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("case", choices=("fault", "hang", "both"))
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    check_parser()
    tools = jobs.Tools(a.build)
    root = tempfile.mkdtemp(prefix="perftracker-watch-")
    try:
        if a.case in ("fault", "both"):
            case_fault(tools, root)
        if a.case in ("hang", "both"):
            case_hang(tools, root)
    except AssertionError as e:
        print(f"FAIL: {e}\n(files under {root})")
        return 1
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"ok: watch {a.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
