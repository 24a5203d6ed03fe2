#!/usr/bin/env python3
"""Fails when the build used a file from outside the source tree that tools/dev.sh does not install.

A build on a machine where someone once ran `apt-get install` by hand can use headers and
libraries that a fresh machine lacks, and stay green. This check reads what the build really
used, from the build system's own records, and asks dpkg which package each file belongs to:

  - headers: `ninja -t deps` (the compiler's dependency output, for every compile ninja ran);
    for a compile ninja holds no record of (a custom command, e.g. a peer benchmark built with
    mpicc), the same command is rerun with -M to list its headers;
  - libraries: every absolute *.so / *.a path and every -lNAME on the link commands
    (`ninja -t commands`), resolved against their -L folders and the system's.

Each file must belong to a package of dev.sh's list or to a package those depend on (Depends
and Pre-Depends, recursively, alternatives and virtual packages included), or to a package
every Debian system has (Essential, Priority required). Files under /usr/local/cuda (the CUDA
toolkit, installed outside Debian on these machines, optional to the build) are allowed.

usage: tools/check_deps.py [--build DIR] [--packages-from tools/dev.sh]
exit 0 when every file is covered; 1 naming, per missing package, a file, who used it and the fix.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTSIDE_DEBIAN = ('/usr/local/cuda',)
COMPILERS = re.compile(r'^(cc|c\+\+|gcc|g\+\+|clang|clang\+\+|mpicc|mpicxx|mpic\+\+)([.-][\w.]+)?$')
SOURCES = ('.c', '.cc', '.cpp', '.cxx')


def listed_packages(dev_sh):
    """The packages=( ... ) array of dev.sh, comments dropped."""
    text = open(dev_sh).read()
    m = re.search(r'^packages=\((.*?)\)', text, re.S | re.M)
    if not m:
        sys.exit(f'check_deps: no packages=( ... ) list in {dev_sh}')
    words = []
    for line in m.group(1).splitlines():
        words += line.split('#', 1)[0].split()
    return set(words)


def installed_packages():
    """{package: (dependency groups, provides, essential or required)} for installed packages."""
    fmt = '${Package}\\t${Status}\\t${Depends}\\t${Pre-Depends}\\t${Provides}\\t${Essential}\\t${Priority}\\n'
    out = subprocess.run(['dpkg-query', '-W', '-f', fmt], capture_output=True, text=True, check=True).stdout
    pkgs, providers = {}, {}
    for line in out.splitlines():
        name, status, dep, pre, provides, essential, priority = (line.split('\t') + [''] * 7)[:7]
        if 'ok installed' not in status:
            continue
        groups = []
        for field in (dep, pre):
            for clause in filter(None, (c.strip() for c in field.split(','))):
                groups.append([alt.split()[0].split(':')[0] for alt in clause.split('|') if alt.strip()])
        pkgs[name] = (groups, essential == 'yes' or priority == 'required')
        for p in filter(None, (x.strip().split()[0] for x in provides.split(',') if x.strip())):
            providers.setdefault(p.split(':')[0], set()).add(name)
    return pkgs, providers


def closure(roots, pkgs, providers):
    """Every installed package reachable from roots through Depends/Pre-Depends."""
    seen, todo = set(), [p for p in roots if p in pkgs]
    seen.update(todo)
    while todo:
        for group in pkgs[todo.pop()][0]:
            for alt in group:
                for cand in ([alt] if alt in pkgs else []) + sorted(providers.get(alt, ())):
                    if cand not in seen:
                        seen.add(cand)
                        todo.append(cand)
    return seen


def file_owners():
    """{path: package} from dpkg's file lists (dpkg -S without one process per file)."""
    owners = {}
    for lst in glob.glob('/var/lib/dpkg/info/*.list'):
        pkg = os.path.basename(lst)[:-5].split(':')[0]
        with open(lst, errors='replace') as f:
            for path in f:
                owners.setdefault(path.rstrip('\n'), pkg)
    return owners


def owner_of(path, owners):
    """dpkg's package for path, trying the forms merged-/usr and symlinks give it."""
    real = os.path.realpath(path)
    for p in (path, os.path.normpath(path), real):
        for q in (p, p[4:] if p.startswith('/usr/') else '/usr' + p):
            if q in owners:
                return owners[q]
    # A file reached through a symlinked folder: dpkg -S knows the link's own path.
    r = subprocess.run(['dpkg', '-S', real], capture_output=True, text=True)
    return r.stdout.split(':')[0].split(',')[0].strip() if r.returncode == 0 else None


def ninja(build, *args):
    return subprocess.run(['ninja', '-C', build, *args], capture_output=True, text=True, check=True).stdout


def used_headers(build):
    """{header: a target that included it}, plus the outputs ninja holds deps records for."""
    used, recorded, target = {}, set(), None
    for line in ninja(build, '-t', 'deps').splitlines():
        if line and not line.startswith(' '):
            target = line.split(':', 1)[0]
            recorded.add(os.path.normpath(os.path.join(build, target)))
        elif line.strip():
            used.setdefault(line.strip(), target)
    return used, recorded


def commands(build):
    for line in ninja(build, '-t', 'commands').splitlines():
        for part in re.split(r'\s*&&\s*', line):
            if part.startswith('cd '):
                continue
            try:
                yield shlex.split(part)
            except ValueError:
                continue


def without_outputs(argv):
    """argv less its outputs (-o, and -MD/-MF-style depfile options, which would take -M's list
    away from stdout) and link flags."""
    takes_value = {'-o', '-MF', '-MT', '-MQ'}
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in takes_value:
            skip = True
        elif a not in ('-MD', '-MMD', '-MP') and not a.startswith(('-l', '-L', '-Wl,')):
            out.append(a)
    return out


def unrecorded_compile_headers(build, recorded):
    """Headers of compiles that left no deps record, by rerunning them with -M."""
    used = {}
    for argv in commands(build):
        if not argv or not COMPILERS.match(os.path.basename(argv[0])):
            continue
        if '-o' not in argv or not any(a.endswith(SOURCES) for a in argv):
            continue
        out = argv[argv.index('-o') + 1]
        if os.path.normpath(os.path.join(build, out)) in recorded:
            continue
        probe = without_outputs(argv) + ['-M']
        r = subprocess.run(probe, capture_output=True, text=True, cwd=build)
        for path in r.stdout.replace('\\\n', ' ').split()[1:]:
            if path.startswith('/'):
                used.setdefault(path, out)
    return used


def used_libraries(build):
    """{library file: the output it was linked into} from the link commands."""
    used, std_dirs = {}, ['/usr/lib/x86_64-linux-gnu', '/lib/x86_64-linux-gnu', '/usr/lib', '/lib']
    for argv in commands(build):
        if '-o' not in argv:
            continue
        out = argv[argv.index('-o') + 1]
        dirs = [a[2:] for a in argv if a.startswith('-L')] + std_dirs
        for a in argv[1:]:
            if a.startswith('/') and re.search(r'\.(so(\.\d+)*|a)$', a):
                used.setdefault(a, out)
            elif a.startswith('-l') and len(a) > 2:
                for d in dirs:
                    hit = next((f for f in (f'{d}/lib{a[2:]}.so', f'{d}/lib{a[2:]}.a') if os.path.exists(f)), None)
                    if hit:
                        used.setdefault(hit, out)
                        break
    return used


def source_dir(build):
    """The source tree this build was configured from (its CMakeCache.txt)."""
    with open(os.path.join(build, 'CMakeCache.txt')) as f:
        for line in f:
            if line.startswith('CMAKE_HOME_DIRECTORY:'):
                return line.split('=', 1)[1].strip()
    return ROOT


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--packages-from', default=os.path.join(ROOT, 'tools', 'dev.sh'))
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, 'build.ninja')):
        sys.exit(f'check_deps: {build} is not a Ninja build (tools/dev.sh configures one)')
    source = source_dir(build)
    trees = tuple({os.path.realpath(d) + '/' for d in (source, build)} | {source + '/', build + '/'})

    headers, recorded = used_headers(build)
    for path, who in unrecorded_compile_headers(build, recorded).items():
        headers.setdefault(path, who)
    files = dict(headers)
    for path, who in used_libraries(build).items():
        files.setdefault(path, who)

    listed = listed_packages(args.packages_from)
    pkgs, providers = installed_packages()
    covered = closure(listed | {p for p, (_, base) in pkgs.items() if base}, pkgs, providers)
    owners = file_owners()

    missing, unowned = {}, {}
    for path, who in sorted(files.items()):
        if not path.startswith('/') or os.path.realpath(path).startswith(trees) or path.startswith(trees):
            continue
        if path.startswith(OUTSIDE_DEBIAN):
            continue
        pkg = owner_of(path, owners)
        if pkg is None:
            unowned.setdefault(path, who)
        elif pkg not in covered:
            missing.setdefault(pkg, []).append((path, who))

    for pkg, uses in sorted(missing.items()):
        path, who = uses[0]
        more = f' (and {len(uses) - 1} more of its files)' if len(uses) > 1 else ''
        print(f'check_deps: {path}{more}, used by {who}, belongs to {pkg}, which {os.path.relpath(args.packages_from, ROOT)} '
              f'does not install: add {pkg} to its package list (or make what needs it optional)')
    for path, who in sorted(unowned.items()):
        print(f'check_deps: {path}, used by {who}, belongs to no Debian package (installed by hand?): '
              f'install it from a package and list that package in {os.path.relpath(args.packages_from, ROOT)}')
    n = len(files)
    if missing or unowned:
        print(f'check_deps: {len(missing)} package(s) missing from the list, {len(unowned)} file(s) from no package, of {n} files used')
        return 1
    print(f'check_deps: all {n} headers and libraries the build used outside the tree come from '
          f'{os.path.relpath(args.packages_from, ROOT)}\'s packages or their dependencies')
    return 0


if __name__ == '__main__':
    sys.exit(main())
