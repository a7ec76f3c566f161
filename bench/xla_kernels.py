"""XLA's GPU kernels per call for one of the suite's JAX networks, longest first.

    python bench/xla_kernels.py --workload resnet50-b128 [--top 40] [--out DIR]

The network from ``bench/suite/jax_nets.py`` (the workload's PyTorch weights, fp16) is
jitted and called 20 times under ``torch.profiler``: its CUPTI activity records see every
kernel of the process, XLA's included. Set beside ``bench/compile_profile.py
--own-kernels`` (dnnc's kernels of the same workload) it shows which of XLA's kernels
do what dnnc's do faster or slower. Writes ``xla-kernels-<date>-<gpu>.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # before jax is imported

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).with_name("results")


def xla_kernels(workload: str, top: int) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import torch

    from bench.compile_profile import kernels_per_call
    from bench.suite.jax_nets import NETS
    from bench.suite.workloads import select

    w = select(workload)[0]
    model, inputs = w.build()
    state = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
    fn, params = NETS[w.model](state, jnp.float16)
    xs = [jnp.asarray(x.float().numpy(), jnp.float16) for x in inputs]
    call = jax.jit(fn)
    torch.cuda.init()  # the profiler's CUPTI records see XLA's kernels in this process
    found = kernels_per_call(f"{workload} XLA", lambda: call(params, *xs).block_until_ready(), top)
    return {"workload": workload, **found}


def main() -> None:
    from bench.gpu_timing import environment, write_record

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", default="resnet50-b128", help="a suite workload whose model jax_nets has")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    record = {"environment": environment(), **xla_kernels(args.workload, args.top)}
    print(f"wrote {write_record(Path(args.out), 'xla-kernels', record)}")


if __name__ == "__main__":
    main()
