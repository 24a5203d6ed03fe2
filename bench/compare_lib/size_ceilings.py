"""A ceiling for every size, not only the largest: the streams of tcp_floor.py and host_floor.py
walking each size's own footprint, measured in the same rounds.

Where the CPUs decide, how much memory an op walks decides how fast bare streams go (4 x 1,
unshaped: 0.94 GB/s a stream walking 256 MiB, 0.68 walking 512), so a 16 or 64 MiB op held to
the largest size's ceiling is held to the wrong one. Each (collective, size, system) gets the
ceiling of its own footprint (tcp_floor.op_footprint): out of place an all-reduce walks its
input and output, in place (torch's all_reduce: gloo's column; coll's in-place cell) one buffer.

With one rank a host the ceiling is the op's shape: the all-reduce half over streams that add
what they receive and half over bare ones (tcp_floor.all_reduce_ceiling), the reduce-scatter
over streams that add, the all-gather over bare ring streams, the broadcast over a chain. With
several ranks a host it is host_floor.py's streams in the algorithm's shape (the broadcast's
one chain through every rank, as coll's), times the busbw factor.
"""
import statistics

from .host_floor import busbw_factor, shaped_kinds
from .tcp_floor import CACHED_BYTES, IN_PLACE_ALL_REDUCE, all_reduce_ceiling, op_footprint


def stream_key(shape, footprint, reduce):
    return f"at_{shape}{'_reduce' if reduce else ''}_{footprint}"


def needs(collective, footprint, hosts, per_host, in_place):
    """[(floor key, shape, footprint, reduce, lanes, copy, add)]: the streams one (collective,
    footprint) ceiling needs."""
    if per_host > 1:
        kinds = shaped_kinds(collective, hosts, per_host, footprint, in_place)[:1]  # one chain for the broadcast
        return [(f"{k[0]}@{footprint}",) + tuple(k[1:]) for k in kinds]
    shape = "chain" if collective == "broadcast" else "ring"
    reduces = {"all_reduce": (True, False), "reduce_scatter": (True,)}.get(collective, (False,))
    return [(stream_key(shape, footprint, r), shape, footprint, r, 1, 0.0, 0.0) for r in reduces]


def footprints(collective, size, ranks, in_place):
    """The footprints one size's ceilings walk: the op's own and, for an out-of-place
    all-reduce, the in-place one its in-place peers and cell walk."""
    own = op_footprint(collective, size, ranks, in_place)
    if collective == "all_reduce" and not in_place:
        return [own, op_footprint(collective, size, ranks, True)]
    return [own]


def size_kinds(scn, collectives):
    """Every size's streams (the largest's too: measure_floor runs the same streams once)."""
    sizes = getattr(scn, "sizes", None) or []
    if len(sizes) < 2:
        return []
    per_host, in_place = getattr(scn, "per_host", 1), getattr(scn.args, "in_place", False)
    ranks = scn.hosts * per_host
    return [k for c in collectives for s in sizes if s > CACHED_BYTES
            for fp in footprints(c, s, ranks, in_place) for k in needs(c, fp, scn.hosts, per_host, in_place)]


def ceiling(floor, collective, footprint, scn, in_place):
    """GB/s of busbw that one round's streams allow an op walking `footprint`; None where not
    measured."""
    kinds = needs(collective, footprint, scn.hosts, scn.per_host, in_place)
    rates = [floor.get(k[0]) for k in kinds]
    if not kinds or None in rates:
        return None
    if scn.per_host > 1:
        return rates[0] * kinds[0][4] * busbw_factor(collective, scn.hosts, scn.n)
    return all_reduce_ceiling(*rates) if collective == "all_reduce" else rates[0]


def median_ceiling(m, collective, footprint, scn, in_place):
    rates = [c for f in m.floors for c in [ceiling(f, collective, footprint, scn, in_place)] if c]
    return statistics.median(rates) if rates else None


def size_ceiling_lines(scn, m, collective, systems, rows):
    """Below a table: each size's ceiling at its own footprint and each system's busbw over it
    (in-place systems over the in-place footprint's), coll's in-place cell beside them."""
    if not m.floors:
        return []
    in_place = scn.args.in_place
    parts = []
    for r in rows:
        size = r["size"]
        own_fp = op_footprint(collective, size, scn.n, in_place)
        own = median_ceiling(m, collective, own_fp, scn, in_place)
        if not own:
            continue
        split = collective == "all_reduce" and not in_place  # in-place systems walk one buffer
        one_buffer = median_ceiling(m, collective, size, scn, True) if split else None
        ratios = []
        for s in systems:
            busbw = r["busbw"].get(s)
            if busbw and split and s in IN_PLACE_ALL_REDUCE:
                if one_buffer:
                    ratios.append(f"{s} {busbw / one_buffer:.2f} (in place)")
            elif busbw:
                ratios.append(f"{s} {busbw / own:.2f}")
        cells = getattr(scn, "in_place_busbw", {}).get(("coll", size), [])
        if cells and one_buffer:
            ratios.append(f"coll in place {statistics.median(b for b, _ in cells) / one_buffer:.2f}")
        text = f"{size >> 20} MiB: {own:.3g} GB/s walking {own_fp >> 20} MiB"
        if one_buffer:
            text += f" ({one_buffer:.3g} in place, {size >> 20} MiB)"
        parts.append(text + ", busbw / that: " + ", ".join(ratios))
    if not parts:
        return []
    shape = ("streams in the algorithm's shape with the work inside each host" if scn.per_host > 1
             else "streams in the op's shape")
    return [f"# each size's own ceiling ({shape}, walking that op's memory), same run: " + "; ".join(parts)]
