"""The limit of an all-gather on one host: the copies it cannot avoid, made by bare processes
with no library in the way (bench/micro/allgather_copies): each of N processes copies every
chunk, its own and the others', once into its output, reading them from shared memory, as a
receiver that reads its peers' memory (CMA) does. Measured each round, in the run beside the
systems, because the machine is shared. In place the own chunk is not copied.

memcpy's rate (the table's header) says what one copy gets; this says what the all-gather's
copies get when every rank makes them at once, reading each other's inputs."""
import re
import statistics

from .common import run_cmd

FLOOR_ROUNDS = "10"
FLOOR_TIMEOUT_S = 120
# Below this the copies stay partly in cache (32 MiB of L3 here) and the bare processes' own
# per-round barrier decides: at 1 MiB coll and Open MPI came 1.2-1.3 x "above" the bound.
MIN_BYTES = 64 << 20


def measure_copy_floor(scn, collectives):
    """busbw in GB/s of the bare copies of an all-gather of the largest size, or None where it
    does not apply (no all-gather, small sizes) or the program failed (the reason is printed)."""
    size = max(scn.sizes)
    if "all_gather" not in collectives or size < MIN_BYTES:
        return None
    args = [str(scn.build / "bin/allgather_copies"), str(scn.n), str(size), FLOOR_ROUNDS]
    if scn.args.in_place:
        args.append("in-place")
    rc, text = run_cmd(args, FLOOR_TIMEOUT_S)
    found = re.search(r"busbw ([0-9.]+) GB/s", text)
    if rc != 0 or not found:
        print(f"# allgather_copies failed, no copy floor this round: {text.strip()[-300:]}", flush=True)
        return None
    return float(found[1])


def copy_floor_lines(scn, m, collective, busbw_by_system):
    """Below the all-gather table: the floor in the same run, and each system's fraction of it at
    the largest size."""
    if collective != "all_gather" or not m.copy_floors:
        return []
    rate = statistics.median(m.copy_floors)
    parts = [f"{s} {b / rate:.2f}" for s, b in busbw_by_system.items() if b]
    how = "the others' chunks" if scn.args.in_place else "every chunk, its own and the others'"
    return [f"# bare copies of this all-gather ({scn.n} processes, each copying {how} once from shared "
            f"memory: bench/micro/allgather_copies), same run: busbw {rate:.3g} GB/s. "
            f"Largest size's busbw / that: " + ", ".join(parts)]
