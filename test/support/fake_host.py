#!/usr/bin/env python3
"""A fake sysfs/procfs tree whose NIC and host counters move: what perftracker's samplers read
(PERFTRACKER_SYSFS_ROOT / PERFTRACKER_PROCFS_ROOT) on a machine without InfiniBand, or with a
fault to show. Files are written in the kernel's formats; the tree mirrors / under ROOT
(ROOT/sys/class/..., ROOT/proc/...).

  fake_host.py build ROOT [--ib mlx5_0:1 ...] [--netdev eth0 ...] [--virtual-netdev lo ...]
                          [--cgroup /job/rank0] [--cpus N] [--set NAME=VALUE ...]
  fake_host.py run ROOT [--rate NAME=PER_SECOND ...] [--set NAME=VALUE ...]
                        [--once SECONDS] [--interval-ms 100]

`run` advances every counter each interval until SIGTERM/SIGINT (exit 0), or by SECONDS once
(`--once`, deterministic), writing each changed file atomically (temporary file + rename in its
directory). It continues from the values in the files, so runs compose. Idle traffic moves
without any rate: a little NIC traffic, CPUs mostly idle, the cgroup using one CPU.

Rates (`--rate`, per second; several add up), NAME@DEVICE for NICs:
  nic.rx_bytes, nic.tx_bytes        InfiniBand port_rcv_data/port_xmit_data (in 4-byte words);
                                    netdev rx_bytes/tx_bytes
  nic.rx_packets, nic.tx_packets, nic.rx_errors, nic.tx_errors, nic.rx_discards, nic.tx_discards
  nic.link_errors                   InfiniBand symbol_error
  nic.ecn_marked, nic.cnp_sent, nic.cnp_handled   InfiniBand hw_counters (RoCE congestion)
  FILE@DEVICE                       any counter file by its path under the port or interface,
                                    e.g. counters/link_downed@mlx5_0/1, statistics/rx_dropped@eth0
  host.cpu_steal_pct, host.cpu_iowait_pct   percent of all CPU time in /proc/stat (the rest is
                                    user time and idle)
  host.cgroup_periods, host.cgroup_throttled_periods, host.cgroup_throttled_ns   cpu.stat
  host.cpu_pressure_ns, host.mem_pressure_ns, host.io_pressure_ns   PSI "some" total (and avg*)
DEVICE is an InfiniBand port HCA/PORT (mlx5_0/1) or an interface name (eth0).

Gauges (`--set`, on build or run): host.load1, host.runnable (/proc/loadavg), nic.up@DEVICE (0/1:
port state / operstate), nic.rate_gbps@DEVICE (port rate / speed).
"""
import argparse
import glob
import os
import signal
import sys
import tempfile
import time

USER_HZ = 100  # /proc/stat ticks per second (the kernel's USER_HZ on every Linux architecture)

IB_COUNTERS = ("port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets",
               "port_rcv_errors", "port_xmit_discards", "symbol_error", "link_error_recovery",
               "link_downed", "local_link_integrity_errors", "port_rcv_remote_physical_errors",
               "port_rcv_switch_relay_errors", "port_rcv_constraint_errors",
               "port_xmit_constraint_errors", "excessive_buffer_overrun_errors", "VL15_dropped",
               "port_xmit_wait")
IB_HW_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled",
                  "out_of_sequence", "packet_seq_err")
NET_STATISTICS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors", "tx_errors",
                  "rx_dropped", "tx_dropped")
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest",
              "guest_nice")
PSI = {"cpu": "host.cpu_pressure_ns", "memory": "host.mem_pressure_ns",
       "io": "host.io_pressure_ns"}

# Signal name -> counter file, per kind of device, and the factor from the rate's unit to it.
IB_SIGNALS = {
    "nic.rx_bytes": ("counters/port_rcv_data", 0.25),
    "nic.tx_bytes": ("counters/port_xmit_data", 0.25),
    "nic.rx_packets": ("counters/port_rcv_packets", 1),
    "nic.tx_packets": ("counters/port_xmit_packets", 1),
    "nic.rx_errors": ("counters/port_rcv_errors", 1),
    "nic.tx_errors": ("counters/port_xmit_constraint_errors", 1),
    "nic.rx_discards": ("counters/port_rcv_constraint_errors", 1),
    "nic.tx_discards": ("counters/port_xmit_discards", 1),
    "nic.link_errors": ("counters/symbol_error", 1),
    "nic.ecn_marked": ("hw_counters/np_ecn_marked_roce_packets", 1),
    "nic.cnp_sent": ("hw_counters/np_cnp_sent", 1),
    "nic.cnp_handled": ("hw_counters/rp_cnp_handled", 1),
}
NET_SIGNALS = {
    "nic.rx_bytes": "statistics/rx_bytes", "nic.tx_bytes": "statistics/tx_bytes",
    "nic.rx_packets": "statistics/rx_packets", "nic.tx_packets": "statistics/tx_packets",
    "nic.rx_errors": "statistics/rx_errors", "nic.tx_errors": "statistics/tx_errors",
    "nic.rx_discards": "statistics/rx_dropped", "nic.tx_discards": "statistics/tx_dropped",
}
# Idle traffic, per second, where no rate says otherwise.
IB_IDLE = {"counters/port_rcv_data": 250000, "counters/port_xmit_data": 250000,
           "counters/port_rcv_packets": 1000, "counters/port_xmit_packets": 1000}
NET_IDLE = {"statistics/rx_bytes": 20000, "statistics/tx_bytes": 20000,
            "statistics/rx_packets": 100, "statistics/tx_packets": 100}


class UsageError(Exception):
    pass


def write_atomic(path, text):
    """Replaces `path` in one rename, so a reader sees the old or the new file, never a mix."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".fake_host.")
    try:
        os.fchmod(fd, 0o644)  # sysfs/procfs files are world-readable (mkstemp makes 0600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


class Host:
    """The tree under ROOT: where each file is, and how to read and write it."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.sys = os.path.join(self.root, "sys")
        self.proc = os.path.join(self.root, "proc")

    # Devices, as the tree holds them (so `run` needs no arguments repeated from `build`).
    def ib_ports(self):
        pattern = os.path.join(self.sys, "class", "infiniband", "*", "ports", "*")
        return {f"{p.split(os.sep)[-3]}/{p.split(os.sep)[-1]}": p
                for p in sorted(glob.glob(pattern))}

    def netdevs(self):
        return {os.path.basename(p): p
                for p in sorted(glob.glob(os.path.join(self.sys, "class", "net", "*")))}

    def device_dir(self, device):
        path = self.ib_ports().get(device) or self.netdevs().get(device)
        if path is None:
            raise UsageError(f"no InfiniBand port or interface '{device}' under {self.root}")
        return path

    def cgroup(self):
        with open(os.path.join(self.proc, "self", "cgroup")) as f:
            return f.read().strip().split("::", 1)[1]

    def cpu_stat_path(self):
        return os.path.join(self.sys, "fs", "cgroup", self.cgroup().lstrip("/"), "cpu.stat")

    # /proc/stat: per-CPU tick counts; the aggregate line is their sum, as the kernel's is.
    def read_proc_stat(self):
        cpus, other = [], []
        with open(os.path.join(self.proc, "stat")) as f:
            for line in f:
                key, *values = line.split()
                if key.startswith("cpu") and key != "cpu":
                    cpus.append([int(v) for v in values])
                elif key != "cpu":
                    other.append(line.rstrip("\n"))
        return cpus, other

    def write_proc_stat(self, cpus, other):
        total = [sum(column) for column in zip(*cpus)]
        lines = ["cpu  " + " ".join(map(str, total))]
        lines += [f"cpu{i} " + " ".join(map(str, c)) for i, c in enumerate(cpus)]
        write_atomic(os.path.join(self.proc, "stat"), "\n".join(lines + other) + "\n")

    def write_loadavg(self, load1, runnable):
        # load1 load5 load15 running/total last_pid
        write_atomic(os.path.join(self.proc, "loadavg"),
                     f"{load1:.2f} 0.40 0.30 {int(runnable)}/345 12345\n")

    def read_loadavg(self):
        with open(os.path.join(self.proc, "loadavg")) as f:
            fields = f.read().split()
        return float(fields[0]), int(fields[3].split("/")[0])

    def read_psi(self, resource):
        with open(os.path.join(self.proc, "pressure", resource)) as f:
            some = f.readline().split()
        return int(some[4].split("=")[1])

    def write_psi(self, resource, total_us, stall_pct):
        # Steady state: every average equals the current stall share.
        avg = f"avg10={stall_pct:.2f} avg60={stall_pct:.2f} avg300={stall_pct:.2f}"
        write_atomic(os.path.join(self.proc, "pressure", resource),
                     f"some {avg} total={total_us}\n"
                     "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")

    def read_cpu_stat(self):
        with open(self.cpu_stat_path()) as f:
            return {k: int(v) for k, v in (line.split() for line in f if line.strip())}

    def write_cpu_stat(self, stat):
        write_atomic(self.cpu_stat_path(), "".join(f"{k} {v}\n" for k, v in stat.items()))


def parse_pairs(pairs, what):
    out = []
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        try:
            out.append((name, float(value)))
        except ValueError:
            raise UsageError(f"malformed {what} '{pair}': NAME=NUMBER") from None
        if not sep or not name:
            raise UsageError(f"malformed {what} '{pair}': NAME=NUMBER")
    return out


def set_nic_gauge(host, name, device, value):
    path = host.device_dir(device)
    is_ib = device in host.ib_ports()
    if name == "nic.up":
        if is_ib:
            write_atomic(os.path.join(path, "state"), "4: ACTIVE\n" if value else "1: DOWN\n")
            write_atomic(os.path.join(path, "phys_state"),
                         "5: LinkUp\n" if value else "3: Disabled\n")
        else:
            write_atomic(os.path.join(path, "operstate"), "up\n" if value else "down\n")
    elif name == "nic.rate_gbps":
        if is_ib:
            write_atomic(os.path.join(path, "rate"), f"{value:g} Gb/sec (4X EDR)\n")
        else:
            write_atomic(os.path.join(path, "speed"), f"{int(value * 1000)}\n")  # Mb/s
    else:
        raise UsageError(f"unknown gauge '{name}'")


def apply_gauges(host, gauges):
    load1, runnable = host.read_loadavg()
    for name, value in gauges:
        if name == "host.load1":
            load1 = value
        elif name == "host.runnable":
            runnable = value
        elif "@" in name:
            set_nic_gauge(host, *name.split("@", 1), value)
        else:
            raise UsageError(f"unknown gauge '{name}'")
    host.write_loadavg(load1, runnable)


def build(args):
    host = Host(args.root)
    pci = iter(range(0x5e, 0x100))
    for spec in args.ib or []:
        hca, _, port = spec.partition(":")
        if not hca or not port.isdigit():
            raise UsageError(f"malformed --ib '{spec}': HCA:PORT, e.g. mlx5_0:1")
        hca_dir = os.path.join(host.sys, "class", "infiniband", hca)
        port_dir = os.path.join(hca_dir, "ports", port)
        for sub, names in (("counters", IB_COUNTERS), ("hw_counters", IB_HW_COUNTERS)):
            os.makedirs(os.path.join(port_dir, sub), exist_ok=True)
            for name in names:
                write_atomic(os.path.join(port_dir, sub, name), "0\n")
        write_atomic(os.path.join(port_dir, "rate"), "100 Gb/sec (4X EDR)\n")
        write_atomic(os.path.join(port_dir, "state"), "4: ACTIVE\n")
        write_atomic(os.path.join(port_dir, "phys_state"), "5: LinkUp\n")
        write_atomic(os.path.join(port_dir, "link_layer"), "InfiniBand\n")
        link_device(host, hca_dir, pci)
    for name, physical in [(n, True) for n in args.netdev or []] + \
                          [(n, False) for n in args.virtual_netdev or []]:
        net_dir = os.path.join(host.sys, "class", "net", name)
        os.makedirs(os.path.join(net_dir, "statistics"), exist_ok=True)
        for stat in NET_STATISTICS:
            write_atomic(os.path.join(net_dir, "statistics", stat), "0\n")
        write_atomic(os.path.join(net_dir, "operstate"), "up\n" if physical else "unknown\n")
        if physical:
            write_atomic(os.path.join(net_dir, "speed"), "100000\n")  # Mb/s
            link_device(host, net_dir, pci)  # only physical NICs have a device
    cgroup = "/" + args.cgroup.strip("/")
    os.makedirs(os.path.join(host.proc, "self"), exist_ok=True)
    write_atomic(os.path.join(host.proc, "self", "cgroup"), f"0::{cgroup}\n")
    os.makedirs(os.path.dirname(host.cpu_stat_path()), exist_ok=True)
    host.write_cpu_stat({"usage_usec": 0, "user_usec": 0, "system_usec": 0, "nr_periods": 0,
                         "nr_throttled": 0, "throttled_usec": 0, "nr_bursts": 0,
                         "burst_usec": 0})
    host.write_proc_stat([[0] * len(CPU_FIELDS) for _ in range(args.cpus)],
                         ["intr 0", "ctxt 0", "btime 1767225600", "processes 1",
                          "procs_running 1", "procs_blocked 0",
                          "softirq 0 0 0 0 0 0 0 0 0 0 0"])
    host.write_loadavg(0.5, 2)
    os.makedirs(os.path.join(host.proc, "pressure"), exist_ok=True)
    for resource in PSI:
        host.write_psi(resource, 0, 0.0)
    apply_gauges(host, parse_pairs(args.set, "--set"))


def link_device(host, directory, pci):
    """A `device` link to a PCI function, as a physical NIC (not lo, not a bridge) has."""
    bdf = f"0000:{next(pci):02x}:00.0"
    target = os.path.join(host.sys, "devices", "pci0000:00", bdf)
    os.makedirs(target, exist_ok=True)
    link = os.path.join(directory, "device")
    if not os.path.islink(link):
        os.symlink(os.path.relpath(target, directory), link)


class Advancer:
    """Moves every counter by its rate; fractions carry over between steps of one run."""

    def __init__(self, host, rates):
        self.host = host
        self.carry = {}
        self.scale = {}  # counter file -> counter units per rate unit (bytes -> 4-byte words)
        self.files = {}  # counter file -> units per second
        self.host_rates = {}
        for path, per_second in IB_IDLE.items():
            for port in host.ib_ports().values():
                self.files[os.path.join(port, path)] = per_second
        for path, per_second in NET_IDLE.items():
            for dev in host.netdevs().values():
                self.files[os.path.join(dev, path)] = per_second
        explicit = {}
        for name, per_second in rates:
            if name.startswith("host."):
                self.host_rates[name] = self.host_rates.get(name, 0) + per_second
                continue
            signal_name, sep, device = name.partition("@")
            if not sep:
                raise UsageError(f"'{name}': NIC rates need @DEVICE (nic.rx_errors@mlx5_0/1)")
            path = self.counter_file(signal_name, device)
            # A rate replaces the idle traffic of its file; several rates on one file add up.
            explicit[path] = explicit.get(path, 0) + per_second
        self.files.update(explicit)
        known = {"host.cpu_steal_pct", "host.cpu_iowait_pct", "host.cgroup_periods",
                 "host.cgroup_throttled_periods", "host.cgroup_throttled_ns", *PSI.values()}
        for name in self.host_rates:
            if name not in known:
                raise UsageError(f"unknown rate '{name}'")
        if self.host_rates.get("host.cpu_steal_pct", 0) + \
                self.host_rates.get("host.cpu_iowait_pct", 0) > 100:
            raise UsageError("steal + iowait above 100% of CPU time")

    def stall_pct(self, name):
        """PSI's averages at steady state: the share of time stalled, in percent."""
        return min(100.0, self.host_rates.get(name, 0) / 1e7)

    def counter_file(self, signal_name, device):
        directory = self.host.device_dir(device)
        if "/" in signal_name:  # a file under the port or interface
            path = os.path.join(directory, signal_name)
        elif device in self.host.ib_ports():
            if signal_name not in IB_SIGNALS:
                raise UsageError(f"unknown InfiniBand rate '{signal_name}'")
            sub, scale = IB_SIGNALS[signal_name]
            path = os.path.join(directory, sub)
            self.scale[path] = scale
        else:
            if signal_name not in NET_SIGNALS:
                raise UsageError(f"unknown interface rate '{signal_name}'")
            path = os.path.join(directory, NET_SIGNALS[signal_name])
        if not os.path.isfile(path):
            raise UsageError(f"no counter file {path}")
        return path

    def take(self, key, amount):
        """The whole units of `amount` (plus what earlier steps left over) for `key`."""
        total = self.carry.get(key, 0.0) + amount
        whole = int(total + 1e-9)  # 0.7 * 0.75 * 1000 is 524.99999...: still 525
        self.carry[key] = total - whole
        return whole

    def step(self, seconds):
        for path, per_second in self.files.items():
            n = self.take(path, per_second * self.scale.get(path, 1) * seconds)
            if n:
                write_atomic(path, f"{read_int(path) + n}\n")
        self.step_proc_stat(seconds)
        self.step_cgroup(seconds)
        for resource, name in PSI.items():
            ns_per_second = self.host_rates.get(name, 0)
            us = self.take(name, ns_per_second / 1000 * seconds)
            if us:
                self.host.write_psi(resource, self.host.read_psi(resource) + us,
                                    self.stall_pct(name))

    def step_proc_stat(self, seconds):
        cpus, other = self.host.read_proc_stat()
        steal = self.host_rates.get("host.cpu_steal_pct", 0) / 100
        iowait = self.host_rates.get("host.cpu_iowait_pct", 0) / 100
        rest = 1 - steal - iowait
        # Of the time left: a quarter user, the rest idle (a host waiting on its GPUs).
        shares = {"user": rest * 0.25, "idle": rest * 0.75, "iowait": iowait, "steal": steal}
        for i, cpu in enumerate(cpus):
            for field, share in shares.items():
                cpu[CPU_FIELDS.index(field)] += self.take(f"cpu{i}.{field}",
                                                          share * USER_HZ * seconds)
        self.host.write_proc_stat(cpus, other)

    def step_cgroup(self, seconds):
        stat = self.host.read_cpu_stat()
        # One CPU's worth of usage, as a training process's main thread.
        user = self.take("user_usec", 0.9e6 * seconds)
        system = self.take("system_usec", 0.1e6 * seconds)
        stat["user_usec"] += user
        stat["system_usec"] += system
        stat["usage_usec"] += user + system
        throttled = self.host_rates.get("host.cgroup_throttled_periods", 0)
        # CFS's period is 100 ms: ten a second, and never fewer than the throttled ones.
        periods = max(self.host_rates.get("host.cgroup_periods", 10), throttled)
        stat["nr_periods"] += self.take("nr_periods", periods * seconds)
        stat["nr_throttled"] += self.take("nr_throttled", throttled * seconds)
        stat["throttled_usec"] += self.take(
            "throttled_usec", self.host_rates.get("host.cgroup_throttled_ns", 0) / 1000 * seconds)
        self.host.write_cpu_stat(stat)


def run(args):
    host = Host(args.root)
    if not os.path.isfile(os.path.join(host.proc, "stat")):
        raise UsageError(f"{args.root} is not a fake host tree (run `build` first)")
    advancer = Advancer(host, parse_pairs(args.rate, "--rate"))
    gauges = parse_pairs(args.set, "--set")
    if gauges:
        apply_gauges(host, gauges)
    if args.once is not None:
        advancer.step(args.once)
        return
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    interval = args.interval_ms / 1000
    last = time.monotonic()
    while not stop:
        time.sleep(interval)
        now = time.monotonic()
        advancer.step(now - last)  # the time that really passed: late wake-ups lose nothing
        last = now


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="create the tree")
    b.add_argument("root")
    b.add_argument("--ib", action="append", metavar="HCA:PORT")
    b.add_argument("--netdev", action="append", metavar="IF", help="a physical interface")
    b.add_argument("--virtual-netdev", action="append", metavar="IF", help="no device link")
    b.add_argument("--cgroup", default="/job", help="the process's cgroup (v2 path)")
    b.add_argument("--cpus", type=int, default=8)
    b.add_argument("--set", action="append", metavar="NAME=VALUE")
    r = sub.add_parser("run", help="advance the counters")
    r.add_argument("root")
    r.add_argument("--rate", action="append", metavar="NAME=PER_SECOND")
    r.add_argument("--set", action="append", metavar="NAME=VALUE")
    r.add_argument("--once", type=float, metavar="SECONDS", help="advance once and exit")
    r.add_argument("--interval-ms", type=float, default=100)
    args = parser.parse_args(argv)
    try:
        build(args) if args.command == "build" else run(args)
    except UsageError as e:
        print(f"fake_host: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
