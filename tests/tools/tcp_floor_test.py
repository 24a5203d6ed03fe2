"""bench/compare_lib/tcp_floor.py: the memory an op walks (its ceiling walks the same), and the
lines under a table that read it: an out-of-place all-reduce's ceiling walks twice the bytes,
the in-place cell of the same runs is set against the streams walking one buffer."""
import sys
import unittest
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from compare_lib.tcp_floor import floor_lines, footprint_kinds, op_footprint  # noqa: E402

MiB = 1 << 20


class Footprint(unittest.TestCase):
    def test_each_collective_walks_its_input_and_output(self):
        self.assertEqual(op_footprint("all_reduce", 256 * MiB, 4, False), 512 * MiB)
        self.assertEqual(op_footprint("all_reduce", 256 * MiB, 4, True), 256 * MiB)
        self.assertEqual(op_footprint("all_gather", 256 * MiB, 4, False), 320 * MiB)
        self.assertEqual(op_footprint("reduce_scatter", 96 * MiB, 3, False), 128 * MiB)
        self.assertEqual(op_footprint("broadcast", 256 * MiB, 4, False), 256 * MiB)  # timed in place

    def test_the_reducing_collectives_also_walk_streams_that_add(self):
        self.assertEqual([k[0] for k in footprint_kinds("all_reduce", MiB, 4, False)],
                         ["walk_all_reduce", "walk_reduce_all_reduce"])
        self.assertEqual(footprint_kinds("broadcast", MiB, 4, False), [("walk_broadcast", "chain", MiB, False)])


def scenario(in_place_busbw):
    return SimpleNamespace(hosts=4, per_host=1, n=4, sizes=[16 * MiB, 256 * MiB], args=SimpleNamespace(in_place=False),
                           in_place_busbw={("coll", 256 * MiB): [(b, None) for b in in_place_busbw]})


class Lines(unittest.TestCase):
    floor = {"ring": 1.6, "chain": 2.0, "ring_op": 0.9, "ring_reduce_op": 0.7, "walk_all_reduce": 0.6,
             "walk_reduce_all_reduce": 0.5}

    def test_out_of_place_all_reduce_against_streams_walking_both_buffers(self):
        m = SimpleNamespace(floors=[self.floor])
        [line] = floor_lines(scenario([0.9]), m, "all_reduce", {"coll": 0.54, "gloo": 0.63})
        self.assertIn("0.6 GB/s walking the largest op's 512 MiB (its input and output)", line)
        self.assertIn("/ the walking streams: coll 0.90.", line)  # gloo works in place: not against 512 MiB
        shaped = 1 / (0.5 / 0.5 + 0.5 / 0.6)
        self.assertIn(f"busbw / that: coll {0.54 / shaped:.2f}.", line)
        # in place (coll's cell, gloo) against one buffer's streams, bare (0.9) and in the shape of 0.7 and 0.9
        in_shape = 1 / (0.5 / 0.7 + 0.5 / 0.9)
        self.assertIn(f"coll in place 0.9 GB/s, 1.00 and {0.9 / in_shape:.2f}; gloo 0.63 GB/s, 0.70 and "
                      f"{0.63 / in_shape:.2f}", line)

    def test_runs_without_the_footprint_keys_read_the_largest_size(self):
        floor = {k: v for k, v in self.floor.items() if not k.startswith("walk")}
        [line] = floor_lines(scenario([]), SimpleNamespace(floors=[floor]), "all_reduce", {"coll": 0.45})
        self.assertIn("0.9 GB/s walking the largest op's 256 MiB, as the op must", line)
        self.assertIn("/ the walking streams: coll 0.50", line)


if __name__ == "__main__":
    unittest.main()
