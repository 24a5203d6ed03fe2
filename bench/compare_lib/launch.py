"""Rank processes: started each in its own session, watched together, killed together.

Every program of bench/ that runs ranks by hand (torch-style environment, no launcher) goes
through here, so that a failed rank, a deadline or a Ctrl-C never leaves the others waiting out
coll's or torch's own long timeouts."""
import os
import socket
import subprocess
import time

LIVE = set()  # rank processes in flight: killed if we are


def rank_env(rank, world, port, addr, secret, local_rank=None, extra=None):
    """torch's variables (what coll's launch detection reads without a launcher), a job secret
    of this launch's own, and extra on top."""
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR=addr, MASTER_PORT=str(port),
               COLL_JOB_SECRET=f"{secret}-{port}")
    env.pop("OMPI_COMM_WORLD_RANK", None)  # inherited from an outer mpirun, it would win
    if local_rank is not None:
        env["LOCAL_RANK"] = str(local_rank)
    env.update(extra or {})
    return env


def start(args, log, env):
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    LIVE.add(proc)
    return proc


def kill_live():
    for proc in list(LIVE):
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    LIVE.clear()


def free_port():
    """A port no socket on this host holds now: the kernel's choice, released for rank 0's
    store to take (a fixed range would collide with other jobs' and ephemeral ports)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def collect(procs, timeout, fail_fast=True):
    """Waits for every (process, log) in procs; the first rank to fail (unless not fail_fast:
    a program whose ranks may exit non-zero on purpose, e.g. coll-doctor's verdict), or the
    deadline, ends them all (a rank whose peer died would otherwise wait out torch's or coll's
    own long timeouts). Returns (rc, rank 0's output), or every rank's output on failure."""
    deadline, rc = time.monotonic() + timeout, 0
    while rc == 0 and any(p.poll() is None for p, _ in procs):
        if time.monotonic() > deadline:
            rc = 124
        time.sleep(0.05)
        if fail_fast:
            rc = rc or next((p.returncode for p, _ in procs if p.returncode), 0)
    if rc == 0:
        rc = next((p.returncode for p, _ in procs if p.returncode), 0)
    for p, _ in procs:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
        LIVE.discard(p)
    texts = []
    for p, log in procs:
        log.seek(0)
        texts.append(log.read())
        log.close()
    return rc, texts[0] if rc == 0 else "\n".join(texts)
