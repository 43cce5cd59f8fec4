"""The files of a fake host (fake_host.py): where each sysfs/procfs file lives under ROOT and
how the kernel formats it. The tree mirrors /: ROOT/sys/class/..., ROOT/proc/...
"""
import glob
import os
import tempfile

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


def build_tree(root, ib_ports, netdevs, virtual_netdevs, cgroup, cpus):
    """Creates the tree with every counter at 0. `ib_ports`: "HCA:PORT" strings."""
    host = Host(root)
    pci = iter(range(0x5e, 0x100))
    for spec in ib_ports:
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
    for name, physical in [(n, True) for n in netdevs] + [(n, False) for n in virtual_netdevs]:
        net_dir = os.path.join(host.sys, "class", "net", name)
        os.makedirs(os.path.join(net_dir, "statistics"), exist_ok=True)
        for stat in NET_STATISTICS:
            write_atomic(os.path.join(net_dir, "statistics", stat), "0\n")
        write_atomic(os.path.join(net_dir, "operstate"), "up\n" if physical else "unknown\n")
        if physical:
            write_atomic(os.path.join(net_dir, "speed"), "100000\n")  # Mb/s
            link_device(host, net_dir, pci)  # only physical NICs have a device
    cgroup = "/" + cgroup.strip("/")
    os.makedirs(os.path.join(host.proc, "self"), exist_ok=True)
    write_atomic(os.path.join(host.proc, "self", "cgroup"), f"0::{cgroup}\n")
    os.makedirs(os.path.dirname(host.cpu_stat_path()), exist_ok=True)
    host.write_cpu_stat({"usage_usec": 0, "user_usec": 0, "system_usec": 0, "nr_periods": 0,
                         "nr_throttled": 0, "throttled_usec": 0, "nr_bursts": 0,
                         "burst_usec": 0})
    host.write_proc_stat([[0] * len(CPU_FIELDS) for _ in range(cpus)],
                         ["intr 0", "ctxt 0", "btime 1767225600", "processes 1",
                          "procs_running 1", "procs_blocked 0",
                          "softirq 0 0 0 0 0 0 0 0 0 0 0"])
    host.write_loadavg(0.5, 2)
    os.makedirs(os.path.join(host.proc, "pressure"), exist_ok=True)
    for resource in PSI:
        host.write_psi(resource, 0, 0.0)
    return host


def link_device(host, directory, pci):
    """A `device` link to a PCI function, as a physical NIC (not lo, not a bridge) has."""
    bdf = f"0000:{next(pci):02x}:00.0"
    target = os.path.join(host.sys, "devices", "pci0000:00", bdf)
    os.makedirs(target, exist_ok=True)
    link = os.path.join(directory, "device")
    if not os.path.islink(link):
        os.symlink(os.path.relpath(target, directory), link)
