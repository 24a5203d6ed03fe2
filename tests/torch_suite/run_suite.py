"""torch's own distributed test suite against a backend: how anyone can check a torch backend.

torch 1.13 (Debian's python3-torch) ships the suite as
torch/testing/_internal/distributed/distributed_test.py (class DistributedTest._DistTestBase,
driven by the variables BACKEND, WORLD_SIZE, TEMP_DIR); upstream drives it from
test/distributed/test_distributed_spawn.py, which is not shipped. This is that driver: one
class built from the suite's base and TestDistBackend, each test spawning WORLD_SIZE processes.

    /usr/bin/python3 tests/torch_suite/run_suite.py --backend gloo --world-size 3 [-k PATTERN]
    PYTHONPATH=build/python /usr/bin/python3 tests/torch_suite/run_suite.py --backend coll --alias ...

--backend coll runs the suite under coll's own name (its skip decorators test the literal names
"gloo" and "nccl", so many tests skip). --alias runs it under the name "gloo" with torch's
process-group factory answering with coll wherever the suite asks for gloo, which is how to
check that coll does what gloo does. The summary line counts passed, failed, errors and skipped
tests; --json FILE writes the outcome of every test.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import unittest


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["gloo", "coll"], required=True)
    p.add_argument("--alias", action="store_true", help="run as 'gloo', built by coll")
    p.add_argument("--world-size", type=int, default=3)
    p.add_argument("-k", dest="patterns", action="append", default=[], help="run tests whose name contains this")
    p.add_argument("--list", help="a file of test names (one per line) to run")
    p.add_argument("--json", help="write {test: outcome} here")
    p.add_argument("--timeout", type=float, default=120, help="seconds per test (the suite's own limit)")
    p.add_argument("--fork", action="store_true",
                   help="fork each test's ranks from this process rather than spawn them (as torch's former "
                        "test_distributed_fork): no torch import per rank, so the whole suite takes about half as long")
    return p.parse_args()


def configure(args):
    """The suite reads these at import, in the parent and in every spawned child."""
    os.environ["BACKEND"] = "gloo" if args.backend == "gloo" or args.alias else args.backend
    os.environ["WORLD_SIZE"] = str(args.world_size)
    os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="coll-torch-suite-"))
    os.environ["COLL_SUITE_BACKEND"] = args.backend + (":alias" if args.alias else "")
    os.environ["TORCH_TEST_TIMEOUT"] = str(args.timeout)
    os.environ["COLL_SUITE_START"] = "fork" if args.fork else "spawn"


def requireTorch():
    """Exit 77 (ctest: skipped) where torch or coll.torch is missing, saying which."""
    try:
        import torch.distributed  # noqa: F401
    except ImportError:
        print("run_suite.py: no torch (apt-get install python3-torch): skipped")
        sys.exit(77)
    if os.environ.get("COLL_SUITE_BACKEND", "gloo").startswith("coll"):
        try:
            import coll.torch  # noqa: F401
        except ImportError as e:
            print(f"run_suite.py: coll.torch cannot be imported ({e}); build with libtorch-dev: skipped")
            sys.exit(77)


def installBackend():
    """In every process: register coll, and in alias mode make 'gloo' groups coll's."""
    choice = os.environ.get("COLL_SUITE_BACKEND", "gloo")
    if not choice.startswith("coll"):
        return
    import torch.distributed.distributed_c10d as c10d
    import coll.torch  # registers the backend "coll"

    if not choice.endswith(":alias"):
        # Under its own name: the suite's extension point for third-party backends ("plugin"),
        # and the feature sets coll implements. Checks of the literal name "gloo" still skip.
        from torch.testing._internal.common_distributed import DistTestCases
        for feature in ("plugin", "ddp", "subgroup"):
            DistTestCases.backend_feature[feature].add("coll")
        return

    if hasattr(c10d.Backend, "_ensure_backend_registered"):  # torch 2.x registers its own lazily
        c10d.Backend._ensure_backend_registered("gloo")
    plugins = getattr(c10d.Backend, "_plugins", {})
    if "GLOO" in plugins:  # torch 2.x: gloo is a registered plugin; its creator now makes coll
        def coll_as_gloo_plugin(opts, backend_options):
            # Profiler events named as gloo's, which the suite looks up by the backend's name.
            return coll.torch._torch.create_process_group(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                                                          profiling_name="gloo")
        plugins["GLOO"] = plugins["GLOO"]._replace(creator_fn=coll_as_gloo_plugin)
        return

    real_gloo, wrap = c10d.ProcessGroupGloo, c10d._create_process_group_wrapper

    class PosingAsGloo(type):
        """torch 2.0-2.5 check `isinstance(backend, ProcessGroupGloo)` and read its class
        attributes: coll's backend passes as one, the attributes are the real gloo's."""
        def __instancecheck__(cls, obj):
            if isinstance(obj, real_gloo):
                return True
            try:
                return obj.name() == "coll"
            except Exception:
                return False

        def __getattr__(cls, name):
            return getattr(real_gloo, name)

    class coll_as_gloo(metaclass=PosingAsGloo):
        def __new__(cls, store, rank, size, timeout=c10d.default_pg_timeout):
            # Profiler events named as gloo's, which the suite looks up by the backend's name.
            return coll.torch._torch.create_process_group(store, rank, size, timeout, profiling_name="gloo")
    c10d.ProcessGroupGloo = coll_as_gloo

    # TORCH_DISTRIBUTED_DEBUG=DETAIL wraps every group with a checker that runs on a real
    # gloo group of its own (torch does so for any backend): keep that one gloo.
    def wrapper_on_real_gloo(*args, **kwargs):
        c10d.ProcessGroupGloo = real_gloo
        try:
            return wrap(*args, **kwargs)
        finally:
            c10d.ProcessGroupGloo = coll_as_gloo
    c10d._create_process_group_wrapper = wrapper_on_real_gloo


def shimExpecttest():
    """torch's test utilities import expecttest (PyPI; no Debian package): assertExpectedInline
    is all the suite needs of it, and it only compares."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import types
        shim = types.ModuleType("expecttest")

        class TestCase(unittest.TestCase):
            def assertExpectedInline(self, actual, expect, skip=0):
                self.assertEqual(actual, expect)
        shim.TestCase = TestCase
        shim.ACCEPT = False
        sys.modules["expecttest"] = shim


if __name__ == "__main__":
    configure(parse())
    requireTorch()
shimExpecttest()
installBackend()

import torch.multiprocessing  # noqa: E402
from torch.testing._internal.common_distributed import TEST_SKIPS  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if os.environ.get("COLL_SUITE_START") == "fork":  # torch 2.x dropped _fork_processes; its core stays
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()


def selected(args):
    loader = unittest.TestLoader()
    names = loader.getTestCaseNames(TestDistBackendWithSpawn)
    wanted = set()
    if args.list:
        with open(args.list) as f:
            wanted = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    missing = sorted(wanted - set(names))
    if missing:  # a renamed test must not drop silently out of a list CI runs
        sys.exit(f"run_suite.py: not in this torch's suite: {', '.join(missing)}")
    out = []
    for n in names:
        if wanted and n not in wanted:
            continue
        if args.patterns and not any(p in n for p in args.patterns):
            continue
        out.append(TestDistBackendWithSpawn(n))
    return unittest.TestSuite(out)


class Outcomes(unittest.TextTestResult):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.outcome = {}
        self.seconds = {}  # per test, to see where the suite's time goes

    def startTest(self, test):
        self.started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        self.seconds[test._testMethodName] = round(time.monotonic() - self.started, 2)
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcome[test._testMethodName] = "passed"

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcome[test._testMethodName] = "failed"

    def addError(self, test, err):
        super().addError(test, err)
        self.outcome[test._testMethodName] = "error"

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome[test._testMethodName] = "skipped"

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcome[test._testMethodName] = "expected failure"


def main():
    args = parse()
    suite = selected(args)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Outcomes, stream=sys.stdout)
    result = runner.run(suite)
    counts = {}
    for v in result.outcome.values():
        counts[v] = counts.get(v, 0) + 1
    label = os.environ["COLL_SUITE_BACKEND"]
    print(f"suite: backend {label}, world size {args.world_size}: " +
          ", ".join(f"{counts.get(k, 0)} {k}" for k in ("passed", "failed", "error", "skipped")), flush=True)
    slowest = sorted(result.seconds.items(), key=lambda kv: -kv[1])[:5]
    print("slowest: " + ", ".join(f"{n} {t:.1f} s" for n, t in slowest), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"backend": label, "world_size": args.world_size, "tests": result.outcome,
                       "seconds": result.seconds}, f, indent=1)
    if not counts.get("passed"):
        print("run_suite.py: no test passed (every selected test skipped, or none selected)")
        sys.exit(1)
    sys.exit(0 if not result.failures and not result.errors else 1)


if __name__ == "__main__":
    main()
