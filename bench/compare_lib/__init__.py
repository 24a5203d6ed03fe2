"""The parts of bench/compare.py: common (systems, paths), scenarios (launching and measuring), report (tables, CSV, plots)."""
