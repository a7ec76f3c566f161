"""Every cuDNN plan for a few graphs, timed alone: what plan search could find.

    python bench/cudnn_plan_probe.py [--modes A,B,FALLBACK] [--only TEXT] [--show 8] [--out DIR]

Graphs built with the cuDNN frontend directly (NHWC, fp16 in and out, float32 compute),
the slow ones of ResNet-50 b128 against XLA: its residual 1x1 convolutions (conv, bias,
add, ReLU) as convolutions and as matmuls, and 7x7 and 3x3 stride-2 stems with their RGB
input padded to 4 and to 8 channels. For each, the heuristics' plans in ``--modes`` are
built and timed in rank order (CUDA events around 20 back-to-back executions after 3),
with each plan's rank, so a fast plan ranked past what tuning times shows. Writes
``cudnn-plan-probe-<date>-<gpu>.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).with_name("results")


def nhwc(n: int, c: int, h: int, w: int) -> tuple[list[int], list[int]]:
    return [n, c, h, w], [c * h * w, 1, w * c, c]


class Graphs:
    def __init__(self) -> None:
        import cudnn

        self.cudnn = cudnn
        self.handle = cudnn.create_handle()
        self.half, self.float = cudnn.data_type.HALF, cudnn.data_type.FLOAT
        self.dev = torch.device("cuda")

    def graph(self) -> Any:
        return self.cudnn.pygraph(
            io_data_type=self.half, intermediate_data_type=self.float, compute_data_type=self.float, handle=self.handle
        )

    def random(self, *shape: int, scale: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, device=self.dev, dtype=torch.half) * scale

    def conv(
        self, n: int, c: int, h: int, w: int, k: int, r: int, stride: int, pad: int, epilogue: str | None
    ) -> tuple[Any, dict]:
        """``epilogue``: None, ``relu`` (bias and ReLU) or ``add`` (bias, residual, ReLU)."""
        g, f = self.graph(), self.float
        d, s = nhwc(n, c, h, w)
        x = g.tensor(name="x", dim=d, stride=s, data_type=self.half)
        wd, ws = nhwc(k, c, r, r)
        wt = g.tensor(name="w", dim=wd, stride=ws, data_type=self.half)
        y = g.conv_fprop(
            image=x,
            weight=wt,
            pre_padding=[pad, pad],
            post_padding=[pad, pad],
            stride=[stride, stride],
            dilation=[1, 1],
            compute_data_type=f,
        )
        ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
        tensors = {x: self.random(n, h, w, c).permute(0, 3, 1, 2), wt: self.random(k, r, r, c, scale=0.1).permute(0, 3, 1, 2)}
        if epilogue:
            b = g.tensor(name="b", dim=[1, k, 1, 1], stride=[k, 1, k, k], data_type=self.half)
            tensors[b] = self.random(1, k, 1, 1)
            y = g.add(a=y, b=b, compute_data_type=f)
            if epilogue == "add":
                rd, rs = nhwc(n, k, ho, wo)
                res = g.tensor(name="r", dim=rd, stride=rs, data_type=self.half)
                tensors[res] = self.random(n, ho, wo, k).permute(0, 3, 1, 2)
                y = g.add(a=y, b=res, compute_data_type=f)
            y = g.relu(input=y, compute_data_type=f)
        y.set_output(True).set_data_type(self.half).set_stride(nhwc(n, k, ho, wo)[1])
        tensors[y] = torch.empty(n, ho, wo, k, device=self.dev, dtype=torch.half).permute(0, 3, 1, 2)
        return g, tensors

    def matmul(self, m: int, kk: int, nn: int, residual: bool) -> tuple[Any, dict]:
        """A 1x1 convolution as [m, kk] x [kk, nn] (its KRSC weight read column-major), bias,
        the residual if asked, ReLU."""
        g, f = self.graph(), self.float
        a = g.tensor(name="a", dim=[1, m, kk], stride=[m * kk, kk, 1], data_type=self.half)
        wt = g.tensor(name="w", dim=[1, kk, nn], stride=[kk * nn, 1, kk], data_type=self.half)
        bias = g.tensor(name="b", dim=[1, 1, nn], stride=[nn, nn, 1], data_type=self.half)
        y = g.add(a=g.matmul(A=a, B=wt, compute_data_type=f), b=bias, compute_data_type=f)
        tensors = {a: self.random(1, m, kk), wt: self.random(1, nn, kk, scale=0.1).transpose(1, 2), bias: self.random(1, 1, nn)}
        if residual:
            res = g.tensor(name="r", dim=[1, m, nn], stride=[m * nn, nn, 1], data_type=self.half)
            tensors[res] = self.random(1, m, nn)
            y = g.add(a=y, b=res, compute_data_type=f)
        y = g.relu(input=y, compute_data_type=f)
        y.set_output(True).set_data_type(self.half)
        tensors[y] = torch.empty(1, m, nn, device=self.dev, dtype=torch.half)
        return g, tensors

    def time_plans(
        self, label: str, g: Any, tensors: dict, modes: list[str], show: int, budget_s: float = 40.0
    ) -> dict[str, Any]:
        started = time.time()
        g.validate()
        g.build_operation_graph()
        ranked = time.time()
        g.create_execution_plans([getattr(self.cudnn.heur_mode, m) for m in modes])
        heuristics_ms = 1000 * (time.time() - ranked)
        g.check_support()
        count = g.get_execution_plan_count()
        rows = []
        for i in range(count):
            if time.time() - started > budget_s:
                print(f"  ({label}: stopped after {i} of {count} plans: {budget_s:.0f} s spent)")
                break
            name = g.get_plan_name_at_index(i)
            try:
                g.build_plan_at_index(i)
                ws = torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), device=self.dev, dtype=torch.uint8)

                def run(i: int = i, ws: torch.Tensor = ws) -> None:
                    g.execute_plan_at_index(tensors, ws, index=i, handle=self.handle)

                rows.append({"rank": i, "name": name, "ms": _ms(run)})
            except Exception as e:  # a plan that does not build or run: listed, not timed
                rows.append({"rank": i, "name": name, "ms": None, "error": str(e)[:120]})
        timed = sorted((r for r in rows if r["ms"] is not None), key=lambda r: r["ms"])
        print(f"{label}: {count} plans ({', '.join(modes)}; heuristics {heuristics_ms:.1f} ms), {time.time() - started:.1f} s")
        for r in timed[:show]:
            print(f"  {r['ms']:8.4f} ms  rank {r['rank']:<3} {r['name']}")
        return {"graph": label, "modes": modes, "plans": rows}


def _ms(run: Callable[[], None], calls: int = 20) -> float:
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def cases(gr: Graphs) -> list[tuple[str, Callable[[], tuple[Any, dict]]]]:
    return [
        ("res1x1 128x56x56 64->256 conv+bias+add+relu", lambda: gr.conv(128, 64, 56, 56, 256, 1, 1, 0, "add")),
        ("res1x1 128x28x28 128->512 conv+bias+add+relu", lambda: gr.conv(128, 128, 28, 28, 512, 1, 1, 0, "add")),
        ("res1x1 as matmul M=401408 K=64 N=256 +bias+add+relu", lambda: gr.matmul(128 * 56 * 56, 64, 256, True)),
        ("res1x1 as matmul M=100352 K=128 N=512 +bias+add+relu", lambda: gr.matmul(128 * 28 * 28, 128, 512, True)),
        ("stem 7x7s2 C=4 128x224", lambda: gr.conv(128, 4, 224, 224, 64, 7, 2, 3, None)),
        ("stem 7x7s2 C=8 128x224", lambda: gr.conv(128, 8, 224, 224, 64, 7, 2, 3, None)),
        ("stem 7x7s2 C=4 +bias+relu", lambda: gr.conv(128, 4, 224, 224, 64, 7, 2, 3, "relu")),
        ("stem 3x3s2 C=4 32x224->32 (mobilenet)", lambda: gr.conv(32, 4, 224, 224, 32, 3, 2, 1, None)),
        ("stem 3x3s2 C=8 32x224->32 (mobilenet)", lambda: gr.conv(32, 8, 224, 224, 32, 3, 2, 1, None)),
    ]


def main() -> None:
    from bench.gpu_timing import environment, write_record

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modes", default="A,B,FALLBACK", help="heuristics modes, in order")
    parser.add_argument("--only", default="", help="only the graphs whose label contains this")
    parser.add_argument("--show", type=int, default=8, help="fastest plans printed per graph")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    gr = Graphs()
    results = []
    for label, make in cases(gr):
        if args.only and args.only not in label:
            continue
        g, tensors = make()
        results.append(gr.time_plans(label, g, tensors, args.modes.split(","), args.show))
    record = {"environment": environment(), "results": results}
    print(f"wrote {write_record(Path(args.out), 'cudnn-plan-probe', record)}")


if __name__ == "__main__":
    main()
