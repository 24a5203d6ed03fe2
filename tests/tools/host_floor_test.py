"""bench/compare_lib/host_floor.py's count of the work inside a host that the hierarchical
algorithms must do for each byte a host sends across its link (the ceiling in the algorithm's
shape), against a count made by walking each rank's moves of each chunk, for 2-5 hosts of 2-4
ranks, and the 2 x 2 figures worked by hand."""
import sys
import unittest
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from compare_lib.host_floor import work_inside_host  # noqa: E402


def walk_moves(collective, hosts, per_host, in_place):
    """(bytes sent across the link, copied, added) of one host for a buffer of 1, rank by rank:
    local rank l owns part l (1/L of the buffer) and crosses the hosts with it, in a ring of H;
    the all-gather's chunks are 1/(H L) each, a lane's H of them one part."""
    h, l = hosts, per_host
    part, chunk = Fraction(1, l), Fraction(1, h * l)
    link = copies = adds = Fraction(0)
    for _rank in range(l):
        if collective in ("all_reduce", "reduce_scatter"):
            for _peer in range(l - 1):  # each local peer's share of my part, copied once and added
                copies += part
                adds += part
            for _step in range(h - 1):  # my part's ring reduce-scatter across hosts: 1/H a step
                link += part / h
                adds += part / h
            if collective == "all_reduce":
                for _step in range(h - 1):  # and its ring all-gather
                    link += part / h
                for _peer in range(l - 1):  # every other part copied in from its owner
                    copies += part
        elif collective == "all_gather":
            for _step in range(h - 1):  # my lane's chunks from the other hosts
                link += chunk
            for _peer in range(l - 1):  # each local peer's lane: its h chunks
                copies += chunk * h
            if not in_place:
                copies += chunk
        else:  # broadcast along a chain through every rank: the buffer crosses once a host
            link = Fraction(1)
            copies = Fraction(l - 1)
    return link, copies, adds


class WorkInsideHost(unittest.TestCase):
    def test_against_walking_each_move(self):
        for collective in ("all_reduce", "reduce_scatter", "all_gather", "broadcast"):
            for hosts in range(2, 6):
                for per_host in range(2, 5):
                    for in_place in (False, True):
                        link, copies, adds = walk_moves(collective, hosts, per_host, in_place)
                        copy, add = work_inside_host(collective, hosts, per_host, in_place)
                        where = f"{collective} on {hosts} x {per_host}, in place {in_place}"
                        self.assertAlmostEqual(copy, float(copies / link), msg=where)
                        self.assertAlmostEqual(add, float(adds / link), msg=where)

    def test_two_by_two_by_hand(self):
        self.assertEqual(work_inside_host("all_reduce", 2, 2), (2.0, 1.5))
        self.assertEqual(work_inside_host("reduce_scatter", 2, 2), (2.0, 3.0))
        self.assertEqual(work_inside_host("all_gather", 2, 2), (3.0, 0.0))
        self.assertEqual(work_inside_host("all_gather", 2, 2, in_place=True), (2.0, 0.0))
        self.assertEqual(work_inside_host("broadcast", 2, 2), (1.0, 0.0))


if __name__ == "__main__":
    unittest.main()
