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
Shared memory inside a host costs the same cores but is not counted: the ceiling is one no
system can pass, not one each must reach.
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
    head = (f"# host-level ceiling, same run ({scn.per_host} lanes a host or one stream, the better, "
            f"{'in a chain' if shape == 'chain' else 'in a ring'} across {scn.hosts} hosts)")
    return [head + ": " + "; ".join(parts)]
