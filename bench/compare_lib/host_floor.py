"""The limit between simulated hosts with several ranks a host (netcluster 2 x 2), where the CPUs
decide: what bare TCP streams carry between the hosts, whatever the algorithm.

With P ranks a host, a collective may cross hosts on one stream a host or on P (hierarchical
algorithms pair local rank i of every host with local rank i of the others, each carrying a
share). So each round measures P lanes a host (lane i of host h streams to lane i of host
h + 1, all lanes of all hosts at once) beside the one-stream ring and chain of tcp_floor.py, and
takes a host's rate R as the better of P lanes' sum and one stream's rate.

Whatever the algorithm, each host of H must send and receive (H-1)/H of an all-gather's or
reduce-scatter's buffer across its link, and twice that of an all-reduce's (they may not be
reduced on the way in a way that sends less); a broadcast must bring the whole buffer into each
other host. In busbw terms (nccl-tests' factors, n ranks in all) the ceiling is then
R * H(n-1) / ((H-1)n) for the all-reduce, all-gather and reduce-scatter, and R for a broadcast.
Shared memory inside a host costs the same cores but is not counted there: the ceiling is one
no system can pass, not one each must reach.

The ceiling in the algorithm's shape counts it. On this machine both simulated hosts, their TCP
and the copies between the ranks of each host share one pair of cores, so each round also runs
the streams as the algorithm lays them out (P lanes a host for the hierarchical all-reduce,
reduce-scatter and all-gather; one chain for the broadcast, which relays through every rank, and
beside it P lanes of chains, a layout a broadcast could take) while each stream's process makes,
as bare memcpy and float32 adds, the work inside a host that the algorithm must do with the
caller's buffers (tcp_streams --copy --add): every byte that passes between two ranks of a host
copied once (one kernel copy, as CMA makes; through a shared slot it takes two), every byte
reduced added once, from that copy. What that leaves out is only the library's own work: its
synchronisation, its slots' second copy, its bookkeeping.
"""
import statistics


def lane_kinds(per_host, walk):
    """(floor key, shape, footprint, reduce, lanes) for the lanes a round measures."""
    if per_host < 2:
        return []
    kinds = [("ring_lanes", "ring", None, False, per_host), ("chain_lanes", "chain", None, False, per_host)]
    if walk:
        kinds += [("ring_lanes_op", "ring", walk, False, per_host), ("chain_lanes_op", "chain", walk, False, per_host),
                  ("ring_lanes_reduce_op", "ring", walk, True, per_host)]
    return kinds


def work_inside_host(collective, hosts, per_host, in_place=False):
    """(bytes copied, bytes added) inside a host for each byte it sends across its link, by the
    hierarchical algorithms (H hosts of L ranks, buffer S; each rank's part S/L):
    - all-reduce: a reduce-scatter inside the host copies and adds (L-1)/L S a rank, the lanes'
      all-reduce adds (H-1)/H of S/L, the all-gather inside copies (L-1)/L S; the link carries
      2(H-1)/H S a host;
    - reduce-scatter: the first two of those, the link (H-1)/H S;
    - all-gather: the copies of the last (and, out of place, each rank's own chunk into its
      output), the link (H-1)/H S;
    - broadcast, a chain through every rank: L-1 local ranks copy the S that crosses the link."""
    h, l = hosts, per_host
    if collective == "broadcast":
        return float(l - 1), 0.0
    copy = (l - 1) * h / (h - 1)
    if collective == "all_reduce":
        return copy, ((l - 1) * h + h - 1) / (2 * (h - 1))
    if collective == "reduce_scatter":
        return copy, ((l - 1) * h + h - 1) / (h - 1)
    return copy + (0 if in_place else 1 / (h - 1)), 0.0


def shaped_kinds(collective, hosts, per_host, walk, in_place=False):
    """[(floor key, shape, footprint, reduce, lanes, copy, add)]: the streams in the algorithm's
    layout with the work inside each host, for one collective (none with one rank a host). A
    broadcast's chain may cross on one stream a host or on P: both are measured."""
    if per_host < 2 or not walk:
        return []
    copy, add = work_inside_host(collective, hosts, per_host, in_place)
    if collective == "broadcast":
        layouts = [("chain", 1), ("chain", per_host)]
    else:
        layouts = [("ring", per_host)]
    return [(f"shaped_{collective}_{lanes}", shape, walk, False, lanes, copy, add) for shape, lanes in layouts]


def busbw_factor(collective, hosts, ranks):
    """A host's bytes per second across its link -> the collective's busbw at that rate."""
    if collective == "broadcast":
        return 1.0
    return hosts * (ranks - 1) / ((hosts - 1) * ranks)


def host_rate(floor, shape, per_host, suffix=""):
    """GB/s one host carries to the next in this round: P lanes' sum or one stream, the better;
    None where the round lacks either."""
    one, lanes = floor.get(shape + suffix), floor.get(f"{shape}_lanes{suffix}")
    if one is None or lanes is None:
        return None
    return max(one, per_host * lanes)


def host_floor_lines(scn, m, collective, busbw_by_system):
    """Below a table with several ranks a host: the host-level ceiling of the same run and each
    system's largest size's busbw over it, in cache and walking the op's footprint (and reducing,
    for the reduce-scatter)."""
    shape = "chain" if collective == "broadcast" else "ring"
    factor = busbw_factor(collective, scn.hosts, scn.n)
    variants = [("", "from a buffer in cache"), ("_op", f"walking the largest op's {max(scn.sizes) >> 20} MiB")]
    if collective == "reduce_scatter":
        variants.append(("_reduce_op", "walking and adding what they receive"))
    parts = []
    for suffix, what in variants:
        rates = [r for f in m.floors for r in [host_rate(f, shape, scn.per_host, suffix)] if r]
        if not rates:
            continue
        ceiling = statistics.median(rates) * factor
        ratios = ", ".join(f"{s} {b / ceiling:.2f}" for s, b in busbw_by_system.items() if b)
        parts.append(f"{what}: {statistics.median(rates):.3g} GB/s a host, busbw ceiling {ceiling:.3g} "
                     f"GB/s; largest size's busbw / that: {ratios}")
    if not parts:
        return []
    parts += shaped_parts(scn, m, collective, busbw_by_system, factor)
    head = (f"# host-level ceiling, same run ({scn.per_host} lanes a host or one stream, the better, "
            f"{'in a chain' if shape == 'chain' else 'in a ring'} across {scn.hosts} hosts)")
    return [head + ": " + "; ".join(parts)]


def shaped_parts(scn, m, collective, busbw_by_system, factor):
    """The ceilings in the algorithm's shape (shaped_kinds: each layout measured) and each
    system's busbw over them."""
    kinds = shaped_kinds(collective, scn.hosts, scn.per_host, max(scn.sizes), scn.args.in_place)
    parts = []
    for key, shape, _, _, lanes, copy, add in kinds:
        rates = [f[key] * lanes for f in m.floors if key in f]
        if not rates:
            continue
        ceiling = statistics.median(rates) * factor
        ratios = ", ".join(f"{s} {b / ceiling:.2f}" for s, b in busbw_by_system.items() if b)
        layout = {("chain", 1): "one chain through every rank, as coll's broadcast",
                  ("chain", scn.per_host): f"{lanes} lanes of chains a host, a layout coll's broadcast does not use",
                  }.get((shape, lanes), f"{lanes} lanes a host")
        parts.append(f"in the algorithm's shape ({layout}; walking the op's memory, each stream's process also "
                     f"copying {copy:.3g} and adding {add:.3g} bytes a byte it sends, the least the ranks of a "
                     f"host must move between them with the caller's buffers): {statistics.median(rates):.3g} "
                     f"GB/s a host, busbw ceiling {ceiling:.3g} GB/s; largest size's busbw / that: {ratios}")
    return parts
