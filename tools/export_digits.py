#!/usr/bin/python3
"""Exports scikit-learn's handwritten digits (1797 8x8 images) to a CSV that coll-train reads.

usage: tools/export_digits.py OUT.csv

One line per image: its 64 pixel values (0..16), then its label (0..9), in the order
sklearn.datasets.load_digits() returns them. Needs python3-sklearn (Debian). Writes to a
temporary file beside OUT and renames it, so a reader never sees half a file.
"""
import os
import sys

from sklearn.datasets import load_digits


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    out = sys.argv[1]
    digits = load_digits()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        for image, label in zip(digits.data, digits.target):
            f.write(",".join(str(int(v)) for v in image) + f",{int(label)}\n")
    os.replace(tmp, out)
    print(f"export_digits: {len(digits.target)} images to {out}")


if __name__ == "__main__":
    main()
