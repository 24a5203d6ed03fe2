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


def measure_floor(scn, collectives=(), more_kinds=()):
    """{"ring": GB/s, "chain": GB/s} per stream (the slowest stream's rate), and "ring_op",
    "chain_op" walking the largest op's footprint where it exceeds the cached buffers; with
    several ranks a host also the lanes of host_floor.py ("ring_lanes", ...); or None
    where the links decide or a stream failed (the reason is printed; the comparison goes on
    without). With several ranks a host, also each collective's streams in its algorithm's
    shape with the work inside each host ("shaped_<collective>", host_floor.py); and `more_kinds`
    (size_ceilings.py: each size's own)."""
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
    ranks = scn.hosts * per_host
    if walk and per_host == 1:
        kinds += [k + (1, 0.0, 0.0) for c in collectives for k in footprint_kinds(c, walk, ranks, in_place)]
    kinds += [k for c in collectives
              for k in shaped_kinds(c, scn.hosts, per_host, walk and op_footprint(c, walk, ranks, in_place), in_place)]
    kinds += list(more_kinds)
    measured = {}  # the same streams asked for under two keys run once
    for key, shape, fp, reduce, lanes, copy, add in kinds:
        what = (shape, fp, reduce, lanes, copy, add)
        if what not in measured:
            rates, error = run_streams(scn, shape == "ring", footprint=fp, reduce=reduce, lanes=lanes,
                                       inside=(copy, add))
            if error:
                print(f"# tcp_streams ({key}) failed, no TCP floor this round: {error}", flush=True)
                return None
            measured[what] = min(rates)
        floor[key] = measured[what]
    return floor


def op_footprint(collective, size, ranks, in_place):
    """The bytes an op of `size` walks on each rank: its output and, out of place, its input (an
    all-reduce's as big as its output, an all-gather's input and a reduce-scatter's output 1/n of
    it). Here streams walking twice the memory carry a third less (4 x 1, unshaped: 0.94 GB/s at
    256 MiB, 0.68 at 512): an out-of-place op's ceiling walks both buffers. The broadcast is
    timed in place."""
    if in_place or collective == "broadcast":
        return size
    if collective == "all_reduce":
        return 2 * size
    return size + size // ranks


def footprint_kinds(collective, size, ranks, in_place):
    """(key, shape, footprint, reduce): the walking streams at the collective's own footprint
    ("walk_<collective>"; and adding what they receive, "walk_reduce_<collective>", for those
    that reduce)."""
    shape = "chain" if collective == "broadcast" else "ring"
    fp = op_footprint(collective, size, ranks, in_place)
    kinds = [(f"walk_{collective}", shape, fp, False)]
    if collective in ("all_reduce", "reduce_scatter"):
        kinds.append((f"walk_reduce_{collective}", shape, fp, True))
    return kinds


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


# torch's all_reduce works in place (torch_dist_perf.py), the MPI peers' and coll's table column
# out of place: an out-of-place ceiling walks twice what these do.
IN_PLACE_ALL_REDUCE = ("gloo", "torch-coll")


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
    own = any(f"walk_{collective}" in f for f in m.floors)  # earlier runs: the largest size's bytes
    in_place_systems = {}
    if own and collective == "all_reduce" and not scn.args.in_place:
        in_place_systems = {s: b for s, b in busbw_by_system.items() if s in IN_PLACE_ALL_REDUCE}
        busbw_by_system = {s: b for s, b in busbw_by_system.items() if s not in IN_PLACE_ALL_REDUCE}
    suffix = f"_{collective}" if own else ""
    walked = [f[k] for f in m.floors for k in [f"walk{suffix}" if own else shape + "_op"] if k in f]
    what = (f"{scn.hosts - 1} bare TCP streams in a chain" if shape == "chain"
            else f"{scn.hosts} bare TCP streams in a ring")
    line = f"# {what}, all at once, same run: {rate:.3g} GB/s each, what the kernel carries on these cores"
    if walked:
        fp = op_footprint(collective, max(scn.sizes), scn.n, scn.args.in_place) if own else max(scn.sizes)
        line += (f" from a buffer in cache; {statistics.median(walked):.3g} GB/s walking the largest op's "
                 f"{fp >> 20} MiB{' (its input and output)' if fp > max(scn.sizes) else ''}, as the op must")
    if scn.per_host == 1:
        parts = [f"{s} {b / rate:.2f}" for s, b in busbw_by_system.items() if b]
        line += ". Largest size's busbw / that: " + ", ".join(parts)
        if walked:
            parts = [f"{s} {b / statistics.median(walked):.2f}" for s, b in busbw_by_system.items() if b]
            line += "; / the walking streams: " + ", ".join(parts)
    reducing = [f[k] for f in m.floors for k in [f"walk_reduce{suffix}" if own else "ring_reduce_op"] if k in f]
    if collective == "reduce_scatter" and reducing:
        rate = statistics.median(reducing)
        line += f". Walking streams that also add what they receive: {rate:.3g} GB/s"
        if scn.per_host == 1:
            line += "; busbw / that: " + ", ".join(f"{s} {b / rate:.2f}" for s, b in busbw_by_system.items() if b)
    if collective == "all_reduce" and reducing and walked:
        line += all_reduce_shape(statistics.median(reducing), statistics.median(walked), scn, busbw_by_system)
    if collective == "all_reduce" and own and not scn.args.in_place:
        line += in_place_ceilings(scn, m, in_place_systems)
    return [line]


def in_place_ceilings(scn, m, in_place_systems):
    """An in-place all-reduce walks one buffer: coll's in-place cell of the same runs and the
    in-place systems (torch's: gloo) against the streams walking the largest size's bytes, bare
    and in the all-reduce's shape."""
    cells = getattr(scn, "in_place_busbw", {}).get(("coll", max(scn.sizes)), [])
    walked = [f["ring_op"] for f in m.floors if "ring_op" in f]
    reducing = [f["ring_reduce_op"] for f in m.floors if "ring_reduce_op" in f]
    systems = dict(in_place_systems)
    if cells:
        systems = {"coll in place": statistics.median(b for b, _ in cells), **systems}
    systems = {s: b for s, b in systems.items() if b}
    if not (systems and walked and reducing):
        return ""
    bare, adding = statistics.median(walked), statistics.median(reducing)
    shaped = all_reduce_ceiling(adding, bare)
    ratios = "; ".join(f"{s} {b:.3g} GB/s, {b / bare:.2f} and {b / shaped:.2f}" for s, b in systems.items())
    return (f". In place the op walks {max(scn.sizes) >> 20} MiB: streams walking that {bare:.3g} GB/s, in the "
            f"all-reduce's shape {shaped:.3g}; largest size's busbw / those: {ratios}")


def all_reduce_ceiling(adding, bare):
    """A ring all-reduce is a reduce-scatter then an all-gather of equal bytes: where the cores
    bound the streams, its ceiling is half the bytes at the rate of streams that add what they
    receive and half at the bare walking streams' (the time of each half added)."""
    return 1 / (0.5 / adding + 0.5 / bare)


def all_reduce_shape(adding, walking, scn, busbw_by_system):
    """The all-reduce's ceiling in its shape (all_reduce_ceiling) and each system's busbw over it."""
    rate = all_reduce_ceiling(adding, walking)
    text = (f". In the all-reduce's shape (half its bytes over streams that add, {adding:.3g} GB/s, half over "
            f"the bare ones): {rate:.3g} GB/s")
    if scn.per_host == 1:
        text += "; busbw / that: " + ", ".join(f"{s} {b / rate:.2f}" for s, b in busbw_by_system.items() if b)
    return text
