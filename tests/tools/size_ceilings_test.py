"""bench/compare_lib/size_ceilings.py: every size gets the ceiling of the memory its own op
walks, each system the one of its own buffers (in place: one), and streams asked for twice run
once."""
import sys
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from compare_lib import tcp_floor  # noqa: E402
from compare_lib.size_ceilings import ceiling, size_ceiling_lines, size_kinds  # noqa: E402

MiB = 1 << 20


def scenario(per_host=1, hosts=4, sizes=(16 * MiB, 256 * MiB), in_place_busbw=None):
    return SimpleNamespace(hosts=hosts, per_host=per_host, n=hosts * per_host, sizes=list(sizes),
                           args=SimpleNamespace(in_place=False, tcp_floor=True),
                           in_place_busbw=in_place_busbw or {}, limit=lambda: None)


class Kinds(unittest.TestCase):
    def test_each_size_walks_its_own_footprint_and_the_in_place_one(self):
        keys = [k[0] for k in size_kinds(scenario(), ["all_reduce"])]
        self.assertEqual(keys, [f"at_ring_reduce_{32 * MiB}", f"at_ring_{32 * MiB}",
                                f"at_ring_reduce_{16 * MiB}", f"at_ring_{16 * MiB}",
                                f"at_ring_reduce_{512 * MiB}", f"at_ring_{512 * MiB}",
                                f"at_ring_reduce_{256 * MiB}", f"at_ring_{256 * MiB}"])

    def test_sizes_in_cache_and_single_sizes_add_nothing(self):
        self.assertEqual(size_kinds(scenario(sizes=[4 * MiB, 256 * MiB]), ["broadcast"]),
                         [(f"at_chain_{256 * MiB}", "chain", 256 * MiB, False, 1, 0.0, 0.0)])
        self.assertEqual(size_kinds(scenario(sizes=[256 * MiB]), ["broadcast"]), [])

    def test_several_ranks_a_host_take_the_algorithms_shape(self):
        [kind] = size_kinds(scenario(per_host=2, hosts=2, sizes=[16 * MiB, 64 * MiB]), ["broadcast"])[:1]
        self.assertEqual(kind[0], f"shaped_broadcast_1@{16 * MiB}")  # one chain through every rank
        self.assertEqual(kind[4:], (1, 1.0, 0.0))  # one lane, each byte copied once inside a host


class Ceiling(unittest.TestCase):
    def test_all_reduce_half_over_adding_streams_half_over_bare(self):
        floor = {f"at_ring_reduce_{32 * MiB}": 0.5, f"at_ring_{32 * MiB}": 1.0}
        self.assertAlmostEqual(ceiling(floor, "all_reduce", 32 * MiB, scenario(), False), 1 / (0.5 / 0.5 + 0.5))
        self.assertIsNone(ceiling(floor, "all_reduce", 16 * MiB, scenario(), False))

    def test_host_level_ceiling_counts_lanes_and_busbw_factor(self):
        scn = scenario(per_host=2, hosts=2, sizes=[16 * MiB, 64 * MiB])
        key = size_kinds(scn, ["all_gather"])[0][0]  # 2 lanes a host
        # 2 lanes of 0.5 GB/s a host; busbw factor H(n-1)/((H-1)n) = 2 * 3 / 4
        self.assertAlmostEqual(ceiling({key: 0.5}, "all_gather", 20 * MiB, scn, False), 1.0 * 1.5)


class Lines(unittest.TestCase):
    def test_each_size_and_system_against_its_own_memory(self):
        scn = scenario(in_place_busbw={("coll", 16 * MiB): [(0.9, None)]})
        floor = {f"at_ring_reduce_{32 * MiB}": 0.6, f"at_ring_{32 * MiB}": 0.6,
                 f"at_ring_reduce_{16 * MiB}": 0.8, f"at_ring_{16 * MiB}": 1.0}
        rows = [{"size": 16 * MiB, "busbw": {"coll": 0.6, "gloo": 0.8}},
                {"size": 256 * MiB, "busbw": {"coll": 0.5, "gloo": 0.5}}]
        [line] = size_ceiling_lines(scn, SimpleNamespace(floors=[floor]), "all_reduce", ["coll", "gloo"], rows)
        in_place = 1 / (0.5 / 0.8 + 0.5 / 1.0)
        self.assertIn(f"16 MiB: 0.6 GB/s walking 32 MiB ({in_place:.3g} in place, 16 MiB)", line)
        self.assertIn(f"coll 1.00, gloo {0.8 / in_place:.2f} (in place), coll in place {0.9 / in_place:.2f}", line)
        self.assertNotIn("256 MiB:", line)  # no streams of its footprint in this round


class Measure(unittest.TestCase):
    def test_streams_asked_for_twice_run_once(self):
        scn = scenario(sizes=[16 * MiB, 256 * MiB])
        calls = []

        def fake(scn, ring, footprint=None, reduce=False, lanes=1, inside=(0.0, 0.0), **_):
            calls.append((ring, footprint, reduce, lanes, inside))
            return [1.0], ""

        with mock.patch.object(tcp_floor, "run_streams", fake):
            floor = tcp_floor.measure_floor(scn, ["all_reduce"], size_kinds(scn, ["all_reduce"]))
        self.assertEqual(len(calls), len(set(calls)))
        self.assertEqual(floor[f"at_ring_{512 * MiB}"], 1.0)
        self.assertEqual(floor[f"at_ring_{256 * MiB}"], floor["ring_op"])


if __name__ == "__main__":
    unittest.main()
