"""The limit between simulated hosts where the CPUs, not the shaped links, decide: bare TCP
streams (bench/tcp_streams), one out of and one into each host, all at once, measured in the
run beside the systems because the machine is shared.

A ring all-reduce, all-gather or reduce-scatter over H hosts with one rank each sends and
receives its bytes on one stream per host while all H streams run, so its busbw is about what
each of H concurrent bare streams gets at best. A broadcast must carry the buffer into H - 1
hosts: at best H - 1 streams each carry it once (a chain), so its bound is a chain's rate.
"About": a system's own socket settings and timing (a mean over ranks of each op) differ from the
bare streams', and the machine is shared; measured here a system came within 10 % above it,
never far.

Where the CPUs decide, so does memory. Bare streams that send from and receive into one 4 MiB
buffer keep their bytes in cache, which no collective of 256 MiB can; so each shape is also
measured walking the footprint of the largest op (half of it sent from, half received into),
and the report gives a system's busbw against both; for a reduce-scatter, whose every received
byte is combined with the rank's own, also against walking streams that add each piece they
receive into their footprint (coll's own kernel, float32 sum).
"""
import os
import re
import statistics
import subprocess
import time

from .host_floor import host_floor_lines, lane_kinds, shaped_kinds

FLOOR_BYTES = "1G"  # a second or so per stream here: long against the start-up skew
FLOOR_TIMEOUT_S = 60


def cpu_may_limit(scn):
    """Unshaped, or faster than 1 Gbit/s: where 4 ranks on this machine's 2 cores can no longer
    fill the links (at 1 Gbit/s every system is held by the link and the floor says nothing).
    --tcp-floor measures it at any rate: what bare streams get through the shaped links (the
    link rate less TCP's and tbf's share), the figure iperf3 once gave here."""
    if getattr(scn.args, "tcp_floor", False):
        return True
    link = scn.limit()  # GB/s, None where unshaped
    return link is None or link > 0.125


CACHED_BYTES = 8 << 20  # tcp_streams' own buffers (4 MiB each way): a footprint no larger is in cache


def measure_floor(scn, collectives=()):
    """{"ring": GB/s, "chain": GB/s} per stream (the slowest stream's rate), and "ring_op",
    "chain_op" walking the largest op's footprint where it exceeds the cached buffers; with
    several ranks a host also the lanes of host_floor.py ("ring_lanes", ...); or None
    where the links decide or a stream failed (the reason is printed; the comparison goes on
    without). With several ranks a host, also each collective's streams in its algorithm's
    shape with the work inside each host ("shaped_<collective>", host_floor.py)."""
    if scn.hosts < 2 or not cpu_may_limit(scn):
        return None
    footprint = max(getattr(scn, "sizes", None) or [0])
    floor = {}
    walk = footprint if footprint > CACHED_BYTES else None
    kinds = [("ring", "ring", None, False, 1), ("chain", "chain", None, False, 1)]
    if walk:
        kinds += [("ring_op", "ring", walk, False, 1), ("chain_op", "chain", walk, False, 1),
                  ("ring_reduce_op", "ring", walk, True, 1)]
    kinds = [k + (0.0, 0.0) for k in kinds + lane_kinds(getattr(scn, "per_host", 1), walk)]
    per_host, in_place = getattr(scn, "per_host", 1), getattr(scn.args, "in_place", False)
    kinds += [k for c in collectives for k in shaped_kinds(c, scn.hosts, per_host, walk, in_place)]
    for key, shape, fp, reduce, lanes, copy, add in kinds:
        rates, error = run_streams(scn, shape == "ring", footprint=fp, reduce=reduce, lanes=lanes,
                                   inside=(copy, add))
        if error:
            print(f"# tcp_streams ({key}) failed, no TCP floor this round: {error}", flush=True)
            return None
        floor[key] = min(rates)
    return floor


def stream_args(scn, host, port, ring, nbytes=FLOOR_BYTES, footprint=None, reduce=False, inside=(0.0, 0.0)):
    """One tcp_streams process of host `host`: it listens on `port` and sends to the next host's
    `port` (a lane: with several processes a host, lane i uses port + i on every host)."""
    args = [str(scn.build / "bin/tcp_streams"), "--bytes", nbytes, "--timeout", str(FLOOR_TIMEOUT_S)]
    if footprint:
        args += ["--footprint", str(footprint)]
    if reduce:
        args += ["--reduce"]
    if any(inside):
        args += ["--copy", f"{inside[0]:.4g}", "--add", f"{inside[1]:.4g}"]
    if ring or host > 0:
        args += ["--listen", str(port)]
    if ring or host < scn.hosts - 1:
        args += ["--to", f"{scn.addr((host + 1) % scn.hosts)}:{port}"]
    return args


def run_streams(scn, ring, nbytes=FLOOR_BYTES, footprint=None, reduce=False, lanes=1, inside=(0.0, 0.0)):
    """Each process's rate, or an error text. `lanes` processes per host, in its namespace: lane
    i of every host streams to lane i of the next host, all lanes at once; each also copying and
    adding `inside` bytes a byte it streams (tcp_streams --copy --add)."""
    ports = [scn.next_port() for _ in range(lanes)]
    procs = [subprocess.Popen(scn.in_host(h) + stream_args(scn, h, port, ring, nbytes, footprint, reduce, inside),
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for port in ports for h in range(scn.hosts)]
    deadline = time.monotonic() + FLOOR_TIMEOUT_S + 30
    outputs = []
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=max(1, deadline - time.monotonic()))[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                if q.poll() is None:
                    os.killpg(q.pid, 9)
            return [], "timed out"
    rates = [float(m[1]) for out in outputs for m in [re.search(r": ([0-9.]+) GB/s", out)] if m]
    if any(p.returncode for p in procs) or len(rates) != len(procs):
        return [], " | ".join(o.strip() for o in outputs if o.strip())[-500:]
    return rates, ""


def floor_lines(scn, m, collective, busbw_by_system):
    """Below a table: the floor in the same run and each system's fraction of it (one rank per
    host; with several, shared memory carries part of the bytes and the host-level ceiling of
    host_floor.py bounds them)."""
    if not m.floors:
        return []
    if scn.per_host > 1:
        return host_floor_lines(scn, m, collective, busbw_by_system)
    shape = "chain" if collective == "broadcast" else "ring"
    rate = statistics.median(f[shape] for f in m.floors)
    walked = [f[shape + "_op"] for f in m.floors if shape + "_op" in f]
    what = (f"{scn.hosts - 1} bare TCP streams in a chain" if shape == "chain"
            else f"{scn.hosts} bare TCP streams in a ring")
    line = f"# {what}, all at once, same run: {rate:.3g} GB/s each, what the kernel carries on these cores"
    if walked:
        line += (f" from a buffer in cache; {statistics.median(walked):.3g} GB/s walking the largest op's "
                 f"{max(scn.sizes) >> 20} MiB, as the op must")
    if scn.per_host == 1:
        parts = [f"{s} {b / rate:.2f}" for s, b in busbw_by_system.items() if b]
        line += ". Largest size's busbw / that: " + ", ".join(parts)
        if walked:
            parts = [f"{s} {b / statistics.median(walked):.2f}" for s, b in busbw_by_system.items() if b]
            line += "; / the walking streams: " + ", ".join(parts)
    reducing = [f["ring_reduce_op"] for f in m.floors if "ring_reduce_op" in f]
    if collective == "reduce_scatter" and reducing:
        rate = statistics.median(reducing)
        line += f". Walking streams that also add what they receive: {rate:.3g} GB/s"
        if scn.per_host == 1:
            line += "; busbw / that: " + ", ".join(f"{s} {b / rate:.2f}" for s, b in busbw_by_system.items() if b)
    return [line]
