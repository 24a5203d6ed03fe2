"""A simulated cluster of bench's own (../shared/tools/netcluster: a network namespace per host,
each host's upload and download shaped by tbf), and ranks launched in its hosts.

Each program brings its own cluster up under its own prefix and subnet and always takes it
down (a with-block, SIGTERM included where the program turns it into SystemExit), so that two
programs, or a program and a test, never share one."""
import os
import subprocess
from pathlib import Path

from .common import NC_PREFIX, NC_SUBNET, NETCLUSTER
from .launch import collect, rank_env, start


class Netcluster:
    """H hosts at one link rate; rank k of a launch runs on host k // per_host."""

    def __init__(self, hosts, rate="1gbit", prefix=NC_PREFIX, subnet=NC_SUBNET, mtu=None):
        self.hosts, self.rate, self.prefix, self.subnet, self.mtu = hosts, rate, prefix, subnet, mtu

    def up(self):
        if os.geteuid() != 0:
            raise OSError("netcluster needs root (network namespaces)")
        cmd = [str(NETCLUSTER), "up", str(self.hosts), "--rate", self.rate, "--prefix", self.prefix,
               "--subnet", self.subnet] + (["--mtu", str(self.mtu)] if self.mtu else [])
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=120)

    def down(self):
        subprocess.run([str(NETCLUSTER), "down", "--prefix", self.prefix], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc):
        self.down()

    def addr(self, host):
        return f"{self.subnet}.{host + 1}"

    def in_host(self, host):
        return [str(NETCLUSTER), "exec", f"{self.prefix}{host}", "--"]

    def launch(self, args, world, per_host, port, timeout, work, extra_env=None, secret="bench",
               fail_fast=True):
        """args as world ranks, per_host to a host, torch-style environment with rank 0's host
        as master; (rc, rank 0's output, or every rank's on failure). fail_fast: launch.collect."""
        procs = []
        for rank in range(world):
            env = rank_env(rank, world, port, self.addr(0), secret, rank % per_host, extra_env)
            log = open(Path(work) / f"rank{rank}.log", "w+")
            procs.append((start(self.in_host(rank // per_host) + list(args), log, env), log))
        return collect(procs, timeout, fail_fast)
