"""Every cuDNN plan for a few graphs, timed alone: what plan search could find.

    python bench/cudnn_plan_probe.py [--modes A,B,FALLBACK] [--only TEXT] [--show 8] [--out DIR]
    python bench/cudnn_plan_probe.py --set resnet50 --batch 32 --sweep [--budget-s 20]

Graphs built with the cuDNN frontend directly (NHWC, fp16 in and out, float32 compute),
the slow ones of ResNet-50 b128 against XLA: its residual 1x1 convolutions (conv, bias,
add, ReLU) as convolutions and as matmuls, and 7x7 and 3x3 stride-2 stems with their RGB
input padded to 4 and to 8 channels. For each, the heuristics' plans in ``--modes`` are
built and timed in rank order (CUDA events around 20 back-to-back executions after 3),
with each plan's rank, so a fast plan ranked past what tuning times shows. Writes
``cudnn-plan-probe-<date>-<gpu>.json``.

``--set resnet50`` takes the convolutions dnnc hands cuDNN in ResNet-50 at ``--batch``
(conv, bias, ReLU, NHWC): the stem, the 1x1 reductions and every 3x3 shape. ``--sweep``
goes past the heuristics: every engine the graph has, each with every combination of its
knobs' values (``get_knobs_for_engine``; at most ``--per-engine`` combinations an engine,
sampled when there are more), engines taken in turn until ``--budget-s`` is spent. Each
plan that builds is timed, and the fastest plans' outputs are checked against the first
heuristic plan's; the heuristics' first eight plans (what tuning times) are timed in the
same process for the comparison.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
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

    def sweep_plans(self, label: str, g: Any, tensors: dict, show: int, budget_s: float, per_engine: int) -> dict[str, Any]:
        """Every heuristic plan (A and FALLBACK, as tuning ranks them), then with
        ``per_engine`` > 0 the knob combinations of every engine; precompiled plans only past
        the first eight ranks (a runtime-compiled one takes up to a second to build). Each
        plan is timed as a CUDA-graph replay (``dnnc.timing.device_time_ms``), which a
        plan's host-side execute (tens of microseconds) does not reach."""
        from dnnc.backends.cudnn.runtime import runtime_compiled
        from dnnc.timing import device_time_ms

        cudnn = self.cudnn
        started = time.time()
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        heuristic = g.get_execution_plan_count()
        created = 0
        if per_engine > 0:
            queues = []
            for engine in range(g.get_engine_count()):
                try:
                    knobs = list(g.get_knobs_for_engine(engine))
                except Exception:
                    continue
                types = [k.type for k in knobs]
                combos = knob_combinations([_knob_values(k) for k in knobs], per_engine, seed=engine)
                queues.append([(engine, dict(zip(types, c, strict=True))) for c in combos])
            for batch in itertools.zip_longest(*queues):  # engines in turn
                for item in batch:
                    if item is not None:
                        try:
                            g.create_execution_plan(item[0], item[1])
                            created += 1
                        except Exception:
                            continue
        try:
            g.check_support()
        except Exception as e:  # plans that are not supported fail to build below
            print(f"  ({label}: check_support: {str(e)[:80]})")
        count = g.get_execution_plan_count()
        runtime = {i for i in range(count) if runtime_compiled(g, i)}
        tuned = [i for i in range(min(8, heuristic)) if i not in runtime] + sorted(i for i in runtime if i < 8)[:2]
        order = [*tuned, *(i for i in range(8, count) if i not in runtime)]
        print(f"{label}: {heuristic} heuristic plans, {created} knob plans, {count - len(runtime)} precompiled", flush=True)
        rows, out, reference, best = [], list(tensors)[-1], None, None  # ``conv`` adds the output last
        for i in order:
            if time.time() - started > budget_s:
                print(f"  ({label}: stopped at plan {i} of {count}: {budget_s:.0f} s spent)")
                break
            row = {"index": i, "name": g.get_plan_name_at_index(i), "heuristic": i < heuristic, "tuned": i in tuned}
            rows.append(row)
            try:
                g.build_plan_at_index(i)
                ws = torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), device=self.dev, dtype=torch.uint8)

                def run(i: int = i, ws: torch.Tensor = ws) -> None:
                    # on the stream a capture records, else the graph replays nothing
                    cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)
                    g.execute_plan_at_index(tensors, ws, index=i, handle=self.handle)

                row["ms"] = device_time_ms(run, give_up_above_ms=None if best is None else 4 * best + 0.05)
            except Exception as e:  # a plan that does not build or run: not timed
                row["error"] = str(e)[:80]
                continue
            best = row["ms"] if best is None else min(best, row["ms"])
            run()
            torch.cuda.synchronize()
            result = tensors[out].float()
            if reference is None:
                reference = result.clone()
            row["max_rel_diff_to_first"] = (result - reference).abs().max().item() / max(reference.abs().max().item(), 1e-6)
        timed = sorted((r for r in rows if "ms" in r), key=lambda r: r["ms"])
        tuned_best = min((r["ms"] for r in rows if "ms" in r and r["tuned"]), default=None)
        print(
            f"  {len(timed)} timed in {time.time() - started:.1f} s; best of what tuning times "
            f"{'-' if tuned_best is None else round(tuned_best * 1000, 2)} us"
        )
        for r in timed[:show]:
            tag = "T" if r["tuned"] else ("H" if r["heuristic"] else " ")
            print(f"  {r['ms'] * 1000:8.2f} us {tag} rank {r['index']:<4} {r['name']}  diff {r['max_rel_diff_to_first']:.1e}")
        return {"graph": label, "sweep": True, "heuristic_plans": heuristic, "tuned_best_ms": tuned_best, "plans": rows}


MAX_KNOB_VALUES = 8
"""A knob's values swept: its first this many from its minimum. Some knobs range widely
(split-K slices up to 2^31), and a plan built with such a value can run for minutes."""


def _knob_values(knob: Any) -> list[int]:
    lo, hi, step = int(knob.min_value), int(knob.max_value), max(1, int(getattr(knob, "stride", 1)))
    return list(range(lo, min(hi, lo + step * (MAX_KNOB_VALUES - 1)) + 1, step))


def knob_combinations(values: list[list[int]], most: int, seed: int) -> list[tuple[int, ...]]:
    """Every combination of ``values`` (one list per knob) if there are at most ``most``,
    else ``most`` distinct ones drawn at random, never the whole product in memory."""
    total = 1
    for v in values:
        total *= max(1, len(v))
    if total <= most:
        return list(itertools.product(*values))
    rng, drawn = random.Random(seed), set()
    while len(drawn) < most:
        drawn.add(tuple(rng.choice(v) for v in values))
    return sorted(drawn)


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


def resnet50_cases(gr: Graphs, n: int) -> list[tuple[str, Callable[[], tuple[Any, dict]]]]:
    """The convolutions (+ bias + ReLU) of ResNet-50 at batch ``n`` that dnnc's program hands
    cuDNN: the stem on 4 channels, the 1x1 reductions, each 3x3 shape (stride 1 and 2)."""
    shapes = [
        ("stem 7x7s2 4->64 224", 4, 224, 64, 7, 2, 3),
        ("1x1 64->64 56", 64, 56, 64, 1, 1, 0),
        ("1x1 256->64 56", 256, 56, 64, 1, 1, 0),
        ("3x3 64->64 56", 64, 56, 64, 3, 1, 1),
        ("3x3s2 128 56->28", 128, 56, 128, 3, 2, 1),
        ("3x3 128->128 28", 128, 28, 128, 3, 1, 1),
        ("1x1 512->256 28", 512, 28, 256, 1, 1, 0),
        ("3x3s2 256 28->14", 256, 28, 256, 3, 2, 1),
        ("3x3 256->256 14", 256, 14, 256, 3, 1, 1),
        ("1x1 1024->256 14", 1024, 14, 256, 1, 1, 0),
        ("1x1 1024->512 14", 1024, 14, 512, 1, 1, 0),
        ("3x3s2 512 14->7", 512, 14, 512, 3, 2, 1),
        ("3x3 512->512 7", 512, 7, 512, 3, 1, 1),
        ("1x1 2048->512 7", 2048, 7, 512, 1, 1, 0),
    ]
    return [
        (f"b{n} {name}", lambda c=c, hw=hw, k=k, r=r, st=st, pad=pad: gr.conv(n, c, hw, hw, k, r, st, pad, "relu"))
        for name, c, hw, k, r, st, pad in shapes
    ]


def _swept_apart(label: str, args: argparse.Namespace) -> dict[str, Any]:
    """One graph's sweep in a process of its own, killed past its budget: a plan can hang."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "graph.json"
        command = [sys.executable, "-u", __file__, "--set", args.set, "--batch", str(args.batch), "--sweep"]
        command += ["--exact", label, "--child-json", str(out), "--budget-s", str(args.budget_s)]
        command += ["--per-engine", str(args.per_engine), "--show", str(args.show)]
        try:
            subprocess.run(command, timeout=args.budget_s + 30, check=False)
        except subprocess.TimeoutExpired:
            print(f"  ({label}: killed after {args.budget_s + 30:.0f} s)", flush=True)
            return {"graph": label, "error": "timed out"}
        return json.loads(out.read_text())[0] if out.exists() else {"graph": label, "error": "no result"}


def main() -> None:
    from bench.gpu_timing import environment, write_record

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modes", default="A,B,FALLBACK", help="heuristics modes, in order")
    parser.add_argument("--only", default="", help="only the graphs whose label contains this")
    parser.add_argument("--show", type=int, default=8, help="fastest plans printed per graph")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--set", default="stems", choices=["stems", "resnet50"], help="which graphs")
    parser.add_argument("--batch", type=int, default=32, help="--set resnet50's batch")
    parser.add_argument("--sweep", action="store_true", help="every engine and knob combination")
    parser.add_argument("--budget-s", type=float, default=20.0, help="--sweep: seconds a graph")
    parser.add_argument("--per-engine", type=int, default=200, help="--sweep: knob combinations an engine")
    parser.add_argument("--name", default="", help="goes into the file name")
    parser.add_argument("--exact", default="", help=argparse.SUPPRESS)  # one graph, in a child process
    parser.add_argument("--child-json", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    gr = Graphs()
    results = []
    chosen = resnet50_cases(gr, args.batch) if args.set == "resnet50" else cases(gr)
    for label, make in chosen:
        if (args.only and args.only not in label) or (args.exact and args.exact != label):
            continue
        if args.sweep and not args.child_json:
            results.append(_swept_apart(label, args))
            continue
        g, tensors = make()
        if args.sweep:
            results.append(gr.sweep_plans(label, g, tensors, args.show, args.budget_s, args.per_engine))
        else:
            results.append(gr.time_plans(label, g, tensors, args.modes.split(","), args.show))
    if args.child_json:
        Path(args.child_json).write_text(json.dumps(results))
        return
    record = {"environment": environment(), "results": results}
    stem = "cudnn-plan-probe" + (f"-{args.name}" if args.name else "")
    print(f"wrote {write_record(Path(args.out), stem, record)}")


if __name__ == "__main__":
    main()
