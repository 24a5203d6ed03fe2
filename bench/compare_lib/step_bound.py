"""The bound and the ceiling of a data-parallel training step (--ddp, --tf) on netcluster.

bound: the forward pass plus the gradients' all-reduce at the link rate. Every host must send
and receive 2(H-1)/H of the gradient bytes over its link (H hosts), whatever the algorithm, so
no backend can beat it (docs/perf/ddp defines it so).

ceiling: the same with the rate that bare TCP streams in a ring, one out of and one into each
host, all at once, carry through the same links in the same round (bench/tcp_streams): the link
rate less what TCP's headers and the shaper take, and what the shared cores allow. It is what a
perfect backend over TCP could reach; a step's ratio to it says what is left to gain in coll.
"""
import re
import statistics

from .tcp_floor import run_streams

RING_BYTES = "256M"  # 2 s a stream at 1 Gbit/s: long against the start-up skew


def rate_bytes(rate):
    """'1gbit' -> bytes per second (tc's units)."""
    m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate or "")
    return float(m[1]) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m[2]] / 8 if m else None


def ring_rate(scn):
    """Bytes per second the slowest of H concurrent bare streams in a ring carried, or None
    (one host, or the streams failed: said, and the table goes on without)."""
    if getattr(scn, "hosts", 1) < 2:
        return None
    rates, error = run_streams(scn, True, RING_BYTES)
    if error:
        print(f"# tcp_streams (ring) failed, no ceiling this round: {error}", flush=True)
        return None
    return min(rates) * 1e9


def wire_ms(hosts, grad_bytes, rate):
    return 2 * (hosts - 1) / hosts * grad_bytes / rate * 1e3


def bound_ms(scn, forward_ms, grad_bytes):
    """The bound (above) in ms, or None where there is none (one host, no figures)."""
    hosts, link = getattr(scn, "hosts", 1), rate_bytes(getattr(scn, "rate", None))
    if hosts < 2 or not link or not grad_bytes or not forward_ms:
        return None
    return forward_ms + wire_ms(hosts, grad_bytes, link)


def bound_lines(scn, steps, forward_ms, grad_bytes, ring_rates, width=44):
    """Lines for a mode's table: the bound at the link rate and the ceiling at the measured
    rate, each with every system's step over it. steps: {system: median step ms or None}."""
    hosts = getattr(scn, "hosts", 1)
    link = rate_bytes(getattr(scn, "rate", None))
    if hosts < 2 or not grad_bytes or not forward_ms:
        return []
    lines = []

    def add(what, rate, note):
        wire = wire_ms(hosts, grad_bytes, rate)
        total = forward_ms + wire
        lines.append(f"{what:<{width}} {total:>10.1f}   (all-reduce {wire:.1f}; {note})")
        ratios = " ".join(f"{(s / total):>10.3f}" if s else f"{'-':>10}" for s in steps.values())
        lines.append(f"{'step / ' + what.split(':')[0]:<{width}} {ratios}")

    if link:
        add("bound: fwd + all-reduce, link rate (ms)", link, f"{link / 1e6:.0f} MB/s")
    rates = [r for r in ring_rates if r]
    if rates:
        rate = statistics.median(rates)
        add("ceiling: fwd + all-reduce, bare TCP (ms)", rate,
            f"{hosts} bare streams in a ring, same run: {rate / 1e6:.1f} MB/s each"
            + (f", {rate / link:.3f} of the link" if link else ""))
    return lines
