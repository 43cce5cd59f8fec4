"""The diagnosis benchmark's matrix: matrix.json's axes expanded into cells, each with the job to
run and its truth, both derived from the cell's parameters (never written per job).

A cell id reads shape.rate.fault.dose.rRANK.sSEED (clean cells: shape.rate.clean.sSEED). A
faulty cell's clean twin is the clean cell of the same shape, rate and seed: its measured step is
the truth the what-if is judged against.
"""

import json
import os
import re
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
MATRIX = os.path.join(HERE, "matrix.json")


@dataclass
class Truth:
    category: str = ""  # regex the whole category must match; "" with none: no claim is right
    ranks: list = field(default_factory=list)
    function: str = ""  # regex the function must match ("" : any)
    none_ok: bool = False  # a masked dose, or a fault no peer can show: no claim is right too
    diff_names: bool = False  # `diff` against the twin must name the function, not only fail


@dataclass
class Cell:
    id: str
    shape: str
    rate: str
    fault: str  # "clean" for a clean run
    dose: str
    position: str  # "first", "middle", "all" or "" (clean)
    seed: int
    job: str  # "sim_train" or "train_lm"
    nodes: int
    args: list
    env: dict
    truth: Truth
    step_s: float  # the shape's nominal step at this rate
    source: str = ""  # hardware, software, external
    twin: str = ""  # the clean twin's id

    @property
    def clean(self):
        return self.fault == "clean"


def load(path=MATRIX):
    with open(path) as f:
        return json.load(f)


def _size(value, step_s, loader):
    """A dose's size: a number, or "{EXPR}", arithmetic over step_ms (the shape's step at this
    rate, in ms), workers and accum (its loader workers a rank, and the batches a step takes:
    a delay the workers share shows only where accum batches take them longer than a step)."""
    if isinstance(value, str):
        m = re.fullmatch(r"\{([\d.+*/() ]|step_ms|workers|accum)+\}", value)
        if not m:
            raise ValueError(f"matrix.json: size {value!r} is neither a number nor "
                             "{arithmetic of step_ms, workers and accum}")
        workers, accum = loader
        return round(eval(value[1:-1], {"__builtins__": {}},
                          {"step_ms": step_s * 1000, "workers": workers, "accum": accum}), 1)
    return value


def _loader(args):
    """The shape's loader workers a rank and batches a step, as its job is told (train_lm.py:
    --workers N; --loop lm takes --accum batches a step, 2 unless told)."""
    def arg(name, default):
        return int(args[args.index(name) + 1]) if name in args else default
    lm = "--loop" in args and args[args.index("--loop") + 1] == "lm"
    return arg("--workers", 0), arg("--accum", 2) if lm else 1


def _fill(text, values):
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), text)


def _shapes_of(fault, m):
    listed = fault.get("shapes")
    return [s for s in m["shapes"] if (listed is None or s in listed) and
            m["shapes"][s]["job"] in fault]


def _truth(fault, position_rank, link, ranks, dose):
    t = fault["truth"]
    if t["ranks"] == "all":
        rank_set = list(range(ranks))
    elif t["ranks"] == "link":
        rank_set = sorted(link)
    else:
        rank_set = [position_rank]
    return Truth(t["category"], rank_set, t["function"],
                 none_ok=dose == "masked" or t.get("none_ok", False),
                 diff_names=t.get("diff_names", False))


def _base(m, shape_name, rate):
    shape = m["shapes"][shape_name]
    r = shape["rates"][rate]
    env = dict(m.get("library_env", {}))
    env.update(shape.get("env", {}))
    env.update(r.get("env", {}))
    return shape, r, list(shape.get("args", [])) + list(r.get("args", [])), env


def _steps(m, shape, r):
    """Steps enough for run_s seconds at the nominal step: with the library's 20 s windows, a
    start-up window and three or more steady ones."""
    return max(20, int(m["run_s"] / r["step_s"]))


def _job_args(m, shape, r, args, seed):
    steps = _steps(m, shape, r)
    if shape["job"] == "sim_train":
        return args + ["--iters", str(steps)], {"SIMGPU_SEED": str(seed)}
    return args + ["--steps", str(steps), "--seed", str(seed)], {}


def clean_cell(m, shape_name, rate, seed):
    shape, r, args, env = _base(m, shape_name, rate)
    args, extra = _job_args(m, shape, r, args, seed)
    env.update(extra)
    return Cell(f"{shape_name}.{rate}.clean.s{seed}", shape_name, rate, "clean", "", "", seed,
                shape["job"], shape.get("nodes", 1), args, env, Truth(), r["step_s"])


def fault_cells(m, shape_name, rate, fault_name):
    shape, r, base_args, base_env = _base(m, shape_name, rate)
    fault = m["faults"][fault_name]
    inject = fault[shape["job"]]
    doses = inject.get("doses", list(m["doses"]))
    all_ranks = inject.get("ranks") == "all" or fault["truth"]["ranks"] == "all"
    positions = {"all": 0} if all_ranks else m["positions"]
    for dose in doses:
        if dose not in inject["sizes"]:
            continue
        size = _size(inject["sizes"][dose], r["step_s"], _loader(base_args))
        for pos_name, rank in positions.items():
            link = fault.get("links", {}).get(str(rank), [])
            values = {"ranks": "*" if all_ranks and shape["job"] == "sim_train" else
                      "all" if all_ranks else rank,
                      "size": size, "link": "-".join(map(str, link))}
            for seed in inject.get("seeds", m["seeds"]):
                args, extra = _job_args(m, shape, r, base_args, seed)
                args = args + [_fill(a, values) for a in inject.get("args", [])]
                env = dict(base_env)
                env.update(extra)
                env.update({k: _fill(v, values) for k, v in inject.get("env", {}).items()})
                where = "all" if all_ranks else f"r{rank}"
                yield Cell(f"{shape_name}.{rate}.{fault_name}.{dose}.{where}.s{seed}", shape_name,
                           rate, fault_name, dose, pos_name, seed, shape["job"],
                           shape.get("nodes", 1), args, env,
                           _truth(fault, rank, link, m["ranks"], dose), r["step_s"],
                           fault.get("source", ""), f"{shape_name}.{rate}.clean.s{seed}")


def cells(m=None):
    """Every cell of the matrix: the clean seeds of each shape and rate first, then the faults."""
    m = m or load()
    out = []
    for shape_name, shape in m["shapes"].items():
        for rate in shape["rates"]:
            out += [clean_cell(m, shape_name, rate, s) for s in m["clean_seeds"]]
    for fault_name, fault in m["faults"].items():
        for shape_name in _shapes_of(fault, m):
            for rate in m["shapes"][shape_name]["rates"]:
                out += list(fault_cells(m, shape_name, rate, fault_name))
    return out


def breadth_order(all_cells, m):
    """The order to record in when the matrix takes more than one sitting: every shape and
    fault at one seed before any seed is repeated. Clean seeds 1-2 at each shape's first rate,
    then its loud, masked and quiet faults at the middle position, then the remaining clean
    seeds, the first position, the second seed, and last the other rates."""
    first_rate = {name: next(iter(s["rates"])) for name, s in m["shapes"].items()}
    seed0, clean2 = m["seeds"][0], m["clean_seeds"][:2]
    dose_tier = {"loud": 1, "masked": 2, "quiet": 3}

    def tier(c):
        if c.rate != first_rate[c.shape]:
            return 8 + (not c.clean)
        if c.clean:
            return 0 if c.seed in clean2 else 4
        if c.seed != seed0:
            return 7
        if c.position == "first":
            return 5 + (c.dose == "quiet")
        return dose_tier[c.dose]
    return sorted(all_cells, key=tier)


def select(all_cells, patterns):
    """The cells whose id matches any of the comma-separated regexes (all without any)."""
    if not patterns:
        return list(all_cells)
    regexes = [re.compile(p) for p in patterns.split(",") if p]
    return [c for c in all_cells if any(r.search(c.id) for r in regexes)]


if __name__ == "__main__":
    import collections
    cs = cells()
    by = collections.Counter((c.shape, c.fault) for c in cs)
    print(f"{len(cs)} cells, {sum(c.clean for c in cs)} clean, "
          f"{len({c.fault for c in cs}) - 1} fault kinds, {len({c.shape for c in cs})} shapes")
    for (shape, fault), n in sorted(by.items()):
        print(f"  {shape:20} {fault:16} {n}")
