#!/usr/bin/env python3
"""check_layers.py must fail, naming the rule, on a tree that breaks it (a check that cannot fail
proves nothing). Builds small trees in a temporary folder; exit 0 when every case is caught."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_layers.py')
TABLE = 'base:\nreduce: base\ntransport: reduce\ncomm: transport\n'


def run(files, table=TABLE, extra_dirs=()):
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, 'src'))
        with open(os.path.join(root, 'src', 'layers.txt'), 'w') as f:
            f.write(table)
        for layer in ('base', 'reduce', 'transport', 'comm') + tuple(extra_dirs):
            os.makedirs(os.path.join(root, 'src', layer), exist_ok=True)
        for path, text in files.items():
            with open(os.path.join(root, 'src', path), 'w') as f:
                f.write(text)
        r = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr


def expect(name, files, code, words, table=TABLE, extra_dirs=()):
    got, out = run(files, table, extra_dirs)
    ok = got == code and all(w in out for w in words)
    print(('ok   ' if ok else 'FAIL ') + name + ('' if ok else f': exit {got}, output:\n{out}'))
    return ok


cases = [
    expect('downward includes pass',
           {'comm/a.cc': '#include "transport/t.h"\n#include "base/s.h"\n#include <vector>\n'}, 0, []),
    expect('a climbing include is named with its rule',
           {'transport/t.h': '#pragma once\n#include "comm/a.h"\n'}, 1,
           ['src/transport/t.h:2', 'comm/a.h', 'transport may include only base, reduce']),
    expect('a sideways include between unrelated layers fails',
           {'reduce/r.cc': '#include "transport/t.h"\n'}, 1, ['reduce may include only base']),
    expect('a folder missing from the table fails',
           {'comm/a.cc': ''}, 1, ['src/extra/ is not in src/layers.txt'], extra_dirs=('extra',)),
    expect('a table naming a layer before it is defined fails',
           {}, 1, ['names comm, which is not a layer listed above it'], table='base: comm\ncomm:\n'),
]
print(f'{sum(cases)} passed, {len(cases) - sum(cases)} failed')
sys.exit(0 if all(cases) else 1)
