"""A compile's progress: the stages and counts a watcher sees, nothing when no one
watches, and the one-line summary of a partition decision ``dnnc compile`` prints."""

from __future__ import annotations

from dnnc import progress
from dnnc.cli.compile import decisions_line
from dnnc.models import conv_block
from dnnc.pipeline import to_canonical_tcp


def test_a_watcher_sees_the_stages_in_order_and_the_counts_add_up() -> None:
    seen: list[str] = []
    with progress.watching(lambda p: seen.append(p.stage)) as counts:
        model, inputs = conv_block(batch=1)
        to_canonical_tcp(model, inputs)
        progress.add(to_time=3)
        progress.add(timed=2, kernels=5)
    assert seen[0] == "export" and "canonical" in seen
    assert (counts.timed, counts.to_time, counts.kernels) == (2, 3, 5)
    assert counts.line() == "canonical, 2/3 candidates timed, 5 kernels built"


def test_without_a_watcher_nothing_is_kept() -> None:
    progress.stage("export")
    progress.add(kernels=1)
    with progress.watching(lambda p: None) as counts:
        pass
    assert counts == progress.Progress()


def test_the_decision_in_one_line() -> None:
    record = {
        "policy": "auto",
        "groups": [{"backend": "cudnn"}, {"backend": "triton"}, {"backend": "cudnn"}],
        "programs": {
            "winner": "cudnn-only",
            "contenders": {"auto": {"program_ms": 0.5}, "cudnn-only": {"program_ms": 0.25}, "triton-only": {"skipped": "x"}},
        },
    }
    assert decisions_line(record) == (
        "partition auto: 2 cudnn, 1 triton groups; whole programs: cudnn-only won (auto 0.500 ms, cudnn-only 0.250 ms); "
        "dnnc explain for why"
    )
    assert decisions_line({"policy": "auto", "groups": []}) is None and decisions_line(None) is None
