#!/usr/bin/python3
"""coll-sim's benchmarks (docs/SIMULATOR.md), one subcommand each:

  sim.py validate [--hosts 4] [--per-host 1] [--rate 1gbit] [--out DIR] [--small "8 ... 512K"]
                  [--large "2M ... 256M"] [--rounds 3] [--iters 40] [--launches 1] [--sim-only]
      every all-reduce and broadcast algorithm measured on netcluster (root), then simulated on
      the topology that measurement probed; the two side by side (compare's counts)
  sim.py compare --measured M.csv --sim S.csv [--title T] [--tolerance 0.15] [--markdown]
      validate's table and counts from its two CSVs
  sim.py repeat FIRST.csv SECOND.csv [--tolerance 0.15]
      two measurements of the same validation against each other: the ceiling for compare
  sim.py goal FIRST.csv SECOND.csv --sim S1.csv [--sim S2.csv] [--agree 0.10] [--tolerance 0.15]
      coll-sim judged where two measurements agree (issue 52's figures): the repeatable points
      within 15 %, the geometric-mean error from 64 KiB, the cost of choosing by the simulation
  sim.py scale [--out docs/perf/sim_scale] [--ranks "16 ... 16384"] [--report-only]
      coll-sim alone at 16 to 16,384 ranks on a 100 Gbit/s fat tree: tables.md, sim_scale.png

`sim.py SUBCOMMAND --help` gives each one's options; compare_lib/sim_*.py say what they do."""
import argparse
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/, for compare_lib
from compare_lib import sim_goal, sim_report, sim_scale, sim_validate  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="coll-sim against netcluster (root)", description=sim_validate.__doc__)
    sim_validate.add_args(v)
    c = sub.add_parser("compare", help="measured against simulated, from the CSVs", description=sim_report.__doc__)
    c.add_argument("--measured", required=True)
    c.add_argument("--sim", required=True)
    c.add_argument("--title", default="")
    c.add_argument("--tolerance", type=float, default=0.15)
    c.add_argument("--markdown", action="store_true")
    r = sub.add_parser("repeat", help="a measurement against a second one", description=sim_report.__doc__)
    r.add_argument("first")
    r.add_argument("second")
    r.add_argument("--tolerance", type=float, default=0.15)
    g = sub.add_parser("goal", help="coll-sim where two measurements agree", description=sim_goal.__doc__)
    sim_goal.add_args(g)
    s = sub.add_parser("scale", help="coll-sim at 16 to 16,384 ranks", description=sim_scale.__doc__)
    sim_scale.add_args(s)
    return p.parse_args(argv)


def main(argv):
    a = parse_args(argv)
    # SIGTERM (a timeout, a kill) unwinds like Ctrl-C: validate's cluster is taken down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.command == "validate":
        sim_validate.validate(a)
    elif a.command == "compare":
        sim_report.compare(a)
    elif a.command == "repeat":
        sim_report.repeat(a)
    elif a.command == "goal":
        sim_goal.goal(a)
    elif a.report_only:
        sim_scale.report(a.out)
    else:
        sim_scale.run(a)


if __name__ == "__main__":
    main(sys.argv[1:])
