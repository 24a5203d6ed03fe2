"""One rank of an elastic DDP job with backend "coll", started by torchrun (--rdzv_backend c10d
--max_restarts 1). It trains STEPS steps of a small model, rank 0 saving a checkpoint (model,
optimiser, step) after each. Rank KILL_RANK kills itself (SIGKILL) before step KILL_STEP, once
(a marker file); torchrun restarts the whole group, and the new group re-initialises coll,
resumes from the checkpoint and trains on. Each rank writes OUTDIR/final_<rank>.pt (its
parameters, its restart count and the step it resumed from); --check compares them with one
process running the same global batches (test_torch_elastic.py on one host,
tests/launcher/torch_elastic_hosts.sh across simulated hosts).

    elastic_train.py OUTDIR STEPS KILL_STEP KILL_RANK          (one rank, under torchrun)
    elastic_train.py --check OUTDIR WORLD STEPS KILL_STEP      (after the job: exit 1 on a difference)
"""
import datetime
import os
import signal
import sys

import torch
import torch.distributed as dist

import coll.torch  # noqa: F401  registers the backend

BATCH = 8  # per rank


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def make_optimizer(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def batch(step, rank):
    """Rank `rank`'s part of step `step`'s global batch: the same whoever computes it."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(BATCH, 16, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def save(path, step, model, opt):
    tmp = f"{path}.tmp"
    torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, tmp)
    os.replace(tmp, path)  # a rank killed mid-save leaves the previous checkpoint whole


def reference_params(world, steps):
    """One process, the global batch of every step: what DDP over `world` ranks must reach."""
    model = make_model()
    opt = make_optimizer(model.parameters())
    for step in range(steps):
        parts = [batch(step, r) for r in range(world)]
        x, y = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach() for p in model.parameters()]


def check(outdir, world, steps, kill_step):
    """The problems with the job's results, none when a rank was killed, every rank resumed
    from a checkpoint and finished with the reference's parameters. (TORCHELASTIC_RESTART_COUNT
    is not checked: an agent whose own workers were healthy restarts them for a new round without
    counting a restart.)"""
    want = reference_params(world, steps)
    problems = [] if os.path.exists(os.path.join(outdir, "killed")) else ["no rank killed itself"]
    for r in range(world):
        path = os.path.join(outdir, f"final_{r}.pt")
        if not os.path.exists(path):
            problems.append(f"rank {r} wrote no {path}")
            continue
        final = torch.load(path)
        if not 1 <= final["first"] <= kill_step:
            problems.append(f"rank {r} resumed at step {final['first']}, not from a checkpoint before {kill_step}")
        for i, (got, ref) in enumerate(zip(final["params"], want)):
            if not torch.allclose(got, ref, rtol=1e-5, atol=1e-6):
                problems.append(f"rank {r} parameter {i}: {got.flatten()[:4]} against {ref.flatten()[:4]}")
    return problems


def main():
    if sys.argv[1] == "--check":
        outdir, world, steps, kill_step = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        problems = check(outdir, world, steps, kill_step)
        print("\n".join(problems) or f"elastic check: {world} ranks resumed after the kill and match the reference")
        sys.exit(1 if problems else 0)
    outdir, steps, kill_step, kill_rank = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    dist.init_process_group("coll", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model()
    opt = make_optimizer(model.parameters())
    ckpt_path, killed = os.path.join(outdir, "ckpt.pt"), os.path.join(outdir, "killed")
    first = 0
    if os.path.exists(ckpt_path):
        ckpt = torch.load(ckpt_path)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        first = ckpt["step"] + 1
    ddp = torch.nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    print(f"elastic rank {rank}/{world} attempt {restarts} starts at step {first}", flush=True)
    for step in range(first, steps):
        if step == kill_step and rank == kill_rank and not os.path.exists(killed):
            open(killed, "w").close()  # once: the rank numbers of the next round may differ
            print(f"elastic rank {rank} kills itself before step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = batch(step, rank)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if rank == 0:
            save(ckpt_path, step, model, opt)
    dist.barrier()
    torch.save({"params": [p.detach().clone() for p in model.parameters()], "restarts": restarts, "first": first},
               os.path.join(outdir, f"final_{rank}.pt"))
    print(f"elastic rank {rank} done: attempt {restarts}, resumed at step {first}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
