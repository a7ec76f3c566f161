"""``bench/compile_profile.py --keep-auto``: the whole-program contest sees ``auto``'s cover
alone while the profile compiles, and is itself again afterwards."""

from __future__ import annotations

from bench.compile_profile import auto_cover_kept
from dnnc.partition import partitioner


def test_keep_auto_hands_the_contest_auto_alone_and_restores_it() -> None:
    original = partitioner.contest
    seen = []

    def fake(program: object, contenders: dict) -> tuple:
        seen.append(sorted(contenders))
        return next(iter(contenders)), {}, None

    partitioner.contest = fake  # type: ignore[assignment]
    try:
        with auto_cover_kept(True):
            partitioner.contest(None, {"auto": 1, "cudnn-only": 2, "triton-only": 3})
        with auto_cover_kept(False):
            partitioner.contest(None, {"auto": 1, "cudnn-only": 2})
        assert partitioner.contest is fake
    finally:
        partitioner.contest = original  # type: ignore[assignment]
    assert seen == [["auto"], ["auto", "cudnn-only"]]
