#!/usr/bin/env python3
"""libcoll.so exports the C API and the public C++ API, nothing else.

Every dynamic symbol libcoll.so defines must be a function of coll.h, or a member, typeinfo or
vtable of a class that include/coll/ marks COLL_API, or a free function it marks COLL_API. No
std:: instantiation, no internal coll:: name, no bundled library (the CUDA runtime).
usage: exported_symbols.py LIBCOLL_SO INCLUDE_DIR
"""
import os
import re
import subprocess
import sys


def public_names(include):
    c_functions, classes, functions = set(), set(), set()
    for name in os.listdir(os.path.join(include, 'coll')):
        text = open(os.path.join(include, 'coll', name)).read()
        c_functions |= set(re.findall(r'COLL_API\s+(?:const\s+)?\w+\*?\s+(coll[A-Z]\w*)\s*\(', text))
        classes |= set(re.findall(r'class\s+COLL_API\s+(\w+)', text))
        functions |= set(re.findall(r'COLL_API\s+[\w:<>*\s]+?\b(\w+)\s*\(', text)) - c_functions
    return c_functions, classes, functions


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True, check=True).stdout
    raw = [line.split()[-1].split('@')[0] for line in out.splitlines() if line.strip()]
    demangled = subprocess.run(['c++filt'], input='\n'.join(raw), capture_output=True, text=True, check=True).stdout
    return list(zip(raw, demangled.splitlines()))


def allowed(raw, name, c_functions, classes, functions):
    if raw in c_functions:
        return True
    if raw.startswith('COLL_'):  # the version node of libcoll.map
        return True
    m = re.match(r'^(?:typeinfo for|typeinfo name for|vtable for) coll::(\w+)$', name)
    if m:
        return m.group(1) in classes
    m = re.match(r'^coll::(\w+)(::|\()', name)
    if not m:
        return False
    return m.group(1) in classes or (m.group(2) == '(' and m.group(1) in functions)


def main():
    lib, include = sys.argv[1], sys.argv[2]
    c_functions, classes, functions = public_names(include)
    symbols = exported(lib)
    bad = [(r, n) for r, n in symbols if not allowed(r, n, c_functions, classes, functions)]
    for r, n in bad:
        print(f'exported but not public: {n} ({r})')
    missing = sorted(c_functions - {r for r, _ in symbols})
    for f in missing:
        print(f'declared in coll.h but not exported: {f}')
    c = sum(1 for r, _ in symbols if r in c_functions)
    print(f'{os.path.basename(lib)}: {len(symbols)} exported symbols: {c} C API functions (of {len(c_functions)} '
          f'in coll.h), {len(symbols) - c} of the public C++ classes {sorted(classes)} and functions {sorted(functions)}')
    return 1 if bad or missing else 0


if __name__ == '__main__':
    sys.exit(main())
