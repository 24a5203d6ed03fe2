"""The parts of bench/compare.py: common (systems, paths), launch (rank processes), netcluster
(a simulated cluster of one's own), scenarios (launching and measuring the systems), report
(tables, CSV, plots), algos (--algos) and ddp (--ddp). bench/scripts/ use launch, netcluster
and common too."""
