"""The coll Python module under collrun: every collective, the errors, abort.

Run by ctest (python.collectives), or by hand:
    PYTHONPATH=build/python COLL_BUILD_DIR=build/bin /usr/bin/python3 -m pytest -q bindings/python/tests
"""
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BIN = pathlib.Path(os.environ.get("COLL_BUILD_DIR", ROOT / "build" / "bin"))
COLLRUN = BIN / "collrun"


def run_ranks(n, mode, timeout=240, **extra_env):
    if not COLLRUN.exists():
        pytest.skip(f"no collrun at {COLLRUN} (set COLL_BUILD_DIR)")
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(BIN.parent / "python"))
    env.setdefault("COLL_TIMEOUT", "60")
    env.update(extra_env)
    proc = subprocess.run([str(COLLRUN), "-n", str(n), sys.executable, str(HERE / "ranks_script.py"), mode],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert proc.returncode == 0, f"collrun -n {n} ranks_script.py {mode} exited {proc.returncode}:\n{proc.stdout}"
    assert proc.stdout.count(f"{mode} ok") == n, proc.stdout


@pytest.mark.parametrize("n", [2, 3])
def test_collectives(n):
    run_ranks(n, "collectives")


@pytest.mark.parametrize("n", [2, 3])
def test_library_memory(n):
    run_ranks(n, "library_memory")


def test_collectives_over_sockets():
    run_ranks(3, "collectives", COLL_TRANSPORT="socket")


@pytest.mark.parametrize("n", [2, 3])
def test_errors(n):
    run_ranks(n, "errors")


def test_abort():
    run_ranks(2, "abort")


def test_forked_child_is_refused():
    run_ranks(2, "forked")


def test_calls_after_close_are_refused():
    run_ranks(2, "after_close")


def test_revoke_then_shrink():
    run_ranks(3, "revoke")


def test_survivors_of_a_killed_rank_shrink_without_naming_it_and_grow_back():
    # collrun reports the killed rank and, with --kill-after 0, lets the others go on.
    env = dict(os.environ, COLL_TIMEOUT="10")
    env.setdefault("PYTHONPATH", str(BIN.parent / "python"))
    if not COLLRUN.exists():
        pytest.skip(f"no collrun at {COLLRUN} (set COLL_BUILD_DIR)")
    proc = subprocess.run([str(COLLRUN), "-n", "4", "--kill-after", "0", sys.executable, str(HERE / "ranks_script.py"),
                           "survivors"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert "rank 3 (pid" in proc.stdout and "killed by signal 9" in proc.stdout, proc.stdout
    assert "terminating" not in proc.stdout, proc.stdout
    assert proc.stdout.count("survivors ok") == 3, proc.stdout
    assert "joiner ok" in proc.stdout, proc.stdout


def test_exit_without_close():
    # A communicator left to the interpreter's exit (and a Work still referenced) must not hang.
    run_ranks(2, "leak")


def test_import_without_launcher():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COLL_", "RANK", "WORLD_SIZE", "MASTER_",
                                                                     "OMPI_", "PMI_", "SLURM_"))}
    env.setdefault("PYTHONPATH", str(BIN.parent / "python"))
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", env["PYTHONPATH"])
    code = ("import coll\n"
            "assert coll.DataType.float32 is not None and coll.ReduceOp.avg is not None\n"
            "try:\n    coll.init()\nexcept coll.Error as e:\n    print('code', e.code)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert "code InvalidArgument" in proc.stdout, proc.stdout
