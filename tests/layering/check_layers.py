#!/usr/bin/env python3
"""Checks every #include in src/ against the layer table, src/layers.txt.

The build already refuses an include that climbs (cmake/layers.cmake gives each layer an include
path holding only the layers below it); this check says which rule was broken, in words, and
also catches what the build cannot see: a folder of src/ missing from the table, a table that
names an unknown folder, or a cycle.

usage: check_layers.py [SOURCE_ROOT]   (default: the repository this file is in)
exit 0 when every include is allowed, 1 with one line per broken rule.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = ('.h', '.hpp', '.cc', '.cpp', '.cu', '.cuh')


def read_table(path):
    """Returns (layers in order, {layer: folders it names}), bottom layer first."""
    order, direct = [], {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            name, sep, below = line.partition(':')
            if not sep:
                sys.exit(f'{path}:{n}: expected "layer: folders below it", got "{line}"')
            name = name.strip()
            for b in below.split():
                if b not in direct:
                    sys.exit(f'{path}:{n}: {name} names {b}, which is not a layer listed above it')
            order.append(name)
            direct[name] = below.split()
    return order, direct


def closure(direct):
    """What each layer may include: what it names and, recursively, what those may include."""
    allowed = {}
    for name in direct:  # bottom first, so every named layer is already closed
        allowed[name] = set(direct[name])
        for b in direct[name]:
            allowed[name] |= allowed[b]
    return allowed


def check(root):
    src = os.path.join(root, 'src')
    table = os.path.join(src, 'layers.txt')
    order, direct = read_table(table)
    allowed = closure(direct)
    problems = []
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for folder in folders:
        if folder not in allowed:
            problems.append(f'src/{folder}/ is not in src/layers.txt: add it with the layers it may include')
    for layer in order:
        if layer not in folders:
            problems.append(f'src/layers.txt names {layer}, but src/{layer}/ does not exist')
    for folder in folders:
        if folder not in allowed:
            continue
        for dirpath, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    problems += check_file(os.path.join(dirpath, name), root, folder, folders, allowed)
    return problems


def check_file(path, root, layer, folders, allowed):
    problems = []
    rel = os.path.relpath(path, root)
    with open(path, errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m or '/' not in m.group(1):
                continue
            target = m.group(1).split('/', 1)[0]
            if target == layer or target not in folders:
                continue  # its own files, the public coll/ headers, or a system header
            if target not in allowed[layer]:
                may = ', '.join(sorted(allowed[layer])) or 'no other layer'
                problems.append(f'{rel}:{n}: includes {m.group(1)}, but {layer} may include only '
                                f'{may} (src/layers.txt): move the code down or depend on an interface below')
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} include(s) break the layering')
        return 1
    print('every include in src/ follows src/layers.txt')
    return 0


if __name__ == '__main__':
    sys.exit(main())
