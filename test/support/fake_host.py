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
import os
import signal
import sys
import time

from fake_host_tree import (CPU_FIELDS, PSI, USER_HZ, Host, UsageError, apply_gauges,
                            build_tree, parse_pairs, read_int, write_atomic)

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


def build(args):
    host = build_tree(args.root, args.ib or [], args.netdev or [], args.virtual_netdev or [],
                      args.cgroup, args.cpus)
    apply_gauges(host, parse_pairs(args.set, "--set"))


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
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
