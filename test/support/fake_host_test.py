#!/usr/bin/env python3
"""fake_host.py: the tree parses as the kernel's files do, and counters move at their rates.

Readers here are written like a sampler's (split on whitespace, key=value pairs), not from
fake_host's own helpers, so a format slip shows up as a parse failure.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_HOST = os.path.join(HERE, "fake_host.py")


def fake_host(*args, check=True):
    return subprocess.run([sys.executable, FAKE_HOST, *args], check=check,
                          capture_output=True, text=True, timeout=60)


def read(root, path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def proc_stat_cpu(root):
    """The aggregate cpu line as {field: ticks}, with the kernel's field order."""
    fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest",
              "guest_nice")
    first = read(root, "proc/stat").splitlines()[0]
    assert first.startswith("cpu  "), first  # the kernel pads the aggregate's name
    return dict(zip(fields, map(int, first.split()[1:])))


def counter(root, path):
    text = read(root, path)
    assert re.fullmatch(r"\d+\n", text), (path, text)
    return int(text)


class FakeHostTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "host")
        fake_host("build", self.root, "--ib", "mlx5_0:1", "--ib", "mlx5_0:2", "--netdev", "eth0",
                  "--virtual-netdev", "lo", "--cgroup", "/job/rank0", "--cpus", "4")

    def tearDown(self):
        self.tmp.cleanup()

    def test_layout_and_formats(self):
        port = "sys/class/infiniband/mlx5_0/ports/1"
        for name in ("port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets",
                     "port_rcv_errors", "port_xmit_discards", "symbol_error",
                     "link_error_recovery", "link_downed", "local_link_integrity_errors"):
            self.assertEqual(counter(self.root, f"{port}/counters/{name}"), 0)
        for name in ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled"):
            self.assertEqual(counter(self.root, f"{port}/hw_counters/{name}"), 0)
        self.assertEqual(read(self.root, f"{port}/rate"), "100 Gb/sec (4X EDR)\n")
        self.assertEqual(read(self.root, f"{port}/state"), "4: ACTIVE\n")
        self.assertTrue(os.path.isdir(os.path.join(self.root,
                                                   "sys/class/infiniband/mlx5_0/ports/2")))
        for name in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors",
                     "tx_errors", "rx_dropped", "tx_dropped"):
            self.assertEqual(counter(self.root, f"sys/class/net/eth0/statistics/{name}"), 0)
        self.assertEqual(read(self.root, "sys/class/net/eth0/operstate"), "up\n")
        self.assertEqual(read(self.root, "sys/class/net/eth0/speed"), "100000\n")
        # Physical NICs have a device; virtual ones do not.
        self.assertTrue(os.path.isdir(os.path.join(self.root, "sys/class/net/eth0/device")))
        self.assertFalse(os.path.exists(os.path.join(self.root, "sys/class/net/lo/device")))
        stat = read(self.root, "proc/stat").splitlines()
        self.assertEqual([l.split()[0] for l in stat[:5]], ["cpu", "cpu0", "cpu1", "cpu2", "cpu3"])
        self.assertTrue(all(len(l.split()) == 11 for l in stat[:5]))
        self.assertRegex(read(self.root, "proc/loadavg"),
                         r"^\d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+\n$")
        for resource in ("cpu", "memory", "io"):
            self.assertRegex(read(self.root, f"proc/pressure/{resource}"),
                             r"^some avg10=\d+\.\d\d avg60=\d+\.\d\d avg300=\d+\.\d\d total=\d+\n"
                             r"full avg10=\d+\.\d\d avg60=\d+\.\d\d avg300=\d+\.\d\d total=\d+\n$")
        self.assertEqual(read(self.root, "proc/self/cgroup"), "0::/job/rank0\n")
        cpu_stat = read(self.root, "sys/fs/cgroup/job/rank0/cpu.stat")
        keys = [line.split()[0] for line in cpu_stat.splitlines()]
        for key in ("usage_usec", "user_usec", "system_usec", "nr_periods", "nr_throttled",
                    "throttled_usec"):
            self.assertIn(key, keys)

    def test_rates_over_once(self):
        before = proc_stat_cpu(self.root)
        fake_host("run", self.root, "--once", "10", "--rate", "host.cpu_steal_pct=30",
                  "--rate", "nic.rx_errors@mlx5_0/1=5", "--rate", "nic.link_errors@mlx5_0/1=2",
                  "--rate", "nic.rx_bytes@mlx5_0/1=4000", "--rate", "nic.rx_errors@eth0=3",
                  "--rate", "counters/link_downed@mlx5_0/2=1",
                  "--rate", "host.cgroup_throttled_periods=5",
                  "--rate", "host.cgroup_throttled_ns=200000000",
                  "--rate", "host.cpu_pressure_ns=100000000")
        after = proc_stat_cpu(self.root)
        delta = {k: after[k] - before[k] for k in after}
        total = sum(delta.values())
        self.assertEqual(total, 4 * 100 * 10)  # 4 CPUs x USER_HZ x 10 s
        self.assertAlmostEqual(delta["steal"] / total, 0.30, places=2)
        port = "sys/class/infiniband/mlx5_0/ports/1/counters"
        self.assertEqual(counter(self.root, f"{port}/port_rcv_errors"), 50)
        self.assertEqual(counter(self.root, f"{port}/symbol_error"), 20)
        self.assertEqual(counter(self.root, f"{port}/port_rcv_data"), 10000)  # 4-byte words
        self.assertGreater(counter(self.root, f"{port}/port_xmit_data"), 0)  # idle traffic
        self.assertEqual(counter(self.root, "sys/class/infiniband/mlx5_0/ports/2/counters/"
                                            "link_downed"), 10)
        self.assertEqual(counter(self.root, "sys/class/net/eth0/statistics/rx_errors"), 30)
        cg = dict(line.split() for line in
                  read(self.root, "sys/fs/cgroup/job/rank0/cpu.stat").splitlines())
        self.assertEqual(int(cg["nr_throttled"]), 50)
        self.assertGreaterEqual(int(cg["nr_periods"]), int(cg["nr_throttled"]))
        self.assertEqual(int(cg["throttled_usec"]), 2000000)
        some = read(self.root, "proc/pressure/cpu").splitlines()[0].split()
        fields = dict(f.split("=") for f in some[1:])
        self.assertEqual(int(fields["total"]), 1000000)  # 0.1 s/s of stall for 10 s, in us
        self.assertEqual(fields["avg10"], "10.00")
        # A second run continues from the files.
        fake_host("run", self.root, "--once", "1", "--rate", "nic.rx_errors@mlx5_0/1=5")
        self.assertEqual(counter(self.root, f"{port}/port_rcv_errors"), 55)

    def test_gauges(self):
        fake_host("run", self.root, "--once", "0", "--set", "host.load1=8.5",
                  "--set", "nic.up@mlx5_0/1=0", "--set", "nic.rate_gbps@mlx5_0/2=200",
                  "--set", "nic.up@eth0=0")
        self.assertTrue(read(self.root, "proc/loadavg").startswith("8.50 "))
        self.assertEqual(read(self.root, "sys/class/infiniband/mlx5_0/ports/1/state"), "1: DOWN\n")
        self.assertEqual(read(self.root, "sys/class/infiniband/mlx5_0/ports/2/rate"),
                         "200 Gb/sec (4X EDR)\n")
        self.assertEqual(read(self.root, "sys/class/net/eth0/operstate"), "down\n")

    def test_unknown_names_are_usage_errors(self):
        for rate in ("nic.rx_errors@mlx9_0/1=1", "nic.bogus@eth0=1", "host.bogus=1",
                     "nic.rx_errors=1", "host.cpu_steal_pct=abc"):
            p = fake_host("run", self.root, "--once", "1", "--rate", rate, check=False)
            self.assertEqual(p.returncode, 2, rate)
            self.assertIn("fake_host:", p.stderr)

    def test_runs_until_sigterm(self):
        before = counter(self.root, "sys/class/net/eth0/statistics/rx_errors")
        proc = subprocess.Popen([sys.executable, FAKE_HOST, "run", self.root,
                                 "--rate", "nic.rx_errors@eth0=1000"])
        try:
            deadline = time.monotonic() + 30
            while counter(self.root, "sys/class/net/eth0/statistics/rx_errors") == before:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=30), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        # Every file was replaced whole: no temporary file left behind.
        leftovers = [f for _, _, files in os.walk(self.root) for f in files
                     if f.startswith(".fake_host.")]
        self.assertEqual(leftovers, [])


if __name__ == "__main__":
    unittest.main()
