"""The cover search against brute force on random small graphs, and the cases
that make covers subtle: groups that would form a cycle, nodes no candidate takes."""

from __future__ import annotations

import random

import pytest

from dnnc.partition.cover import NoCover, best_cover, brute_force_cover


def random_instance(rng: random.Random, n: int, extra: int) -> tuple[list[int], list[tuple[int, float]]]:
    """A DAG on ``n`` nodes in topological order and candidates: every node alone
    (so a cover exists) plus ``extra`` random sets of 2-4 nodes with random costs."""
    preds = [sum(1 << p for p in range(i) if rng.random() < 0.35) for i in range(n)]
    candidates = [(1 << i, rng.uniform(1.0, 3.0)) for i in range(n)]
    for _ in range(extra):
        members = rng.sample(range(n), rng.randint(2, min(4, n)))
        candidates.append((sum(1 << m for m in members), rng.uniform(0.5, 6.0)))
    return preds, candidates


@pytest.mark.parametrize("seed", range(60))
def test_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    preds, candidates = random_instance(rng, rng.randint(3, 7), rng.randint(2, 9))
    found = best_cover(preds, candidates)
    assert found.cost == pytest.approx(brute_force_cover(preds, candidates))
    masks = [candidates[i][0] for i in found.chosen]
    assert sum(masks) == (1 << len(preds)) - 1
    assert all(a & b == 0 for i, a in enumerate(masks) for b in masks[i + 1 :])


def test_chosen_groups_run_in_order() -> None:
    """Every chosen group reads only nodes of itself or of groups chosen before it."""
    rng = random.Random(7)
    for _ in range(40):
        preds, candidates = random_instance(rng, 7, 8)
        covered = 0
        for i in best_cover(preds, candidates).chosen:
            mask = candidates[i][0]
            needs = 0
            for node in range(len(preds)):
                if mask >> node & 1:
                    needs |= preds[node]
            assert needs & ~mask & ~covered == 0
            covered |= mask


def test_cheap_groups_that_would_form_a_cycle_are_refused() -> None:
    """a->c and b->d: {a, d} and {b, c} are each convex and cheap, but together each
    waits for the other. The search must pay for another cover."""
    a, b, c, d = 0, 1, 2, 3
    preds = [0, 0, 1 << a, 1 << b]
    bits = lambda *ns: sum(1 << n for n in ns)  # noqa: E731
    candidates = [(bits(a, d), 1.0), (bits(b, c), 1.0), *((bits(n), 5.0) for n in range(4))]
    found = best_cover(preds, candidates)
    assert found.cost == pytest.approx(brute_force_cover(preds, candidates)) == pytest.approx(1.0 + 5.0 + 5.0)
    assert not {0, 1} <= set(found.chosen)


def test_fusion_beats_parts_only_when_cheaper() -> None:
    preds = [0, 1, 2]  # a chain: 0 -> 1 -> 2
    parts = [(1, 1.0), (2, 1.0), (4, 1.0)]
    assert best_cover(preds, [*parts, (7, 2.5)]).chosen == (3,)
    assert best_cover(preds, [*parts, (7, 3.5)]).cost == pytest.approx(3.0)


def test_no_cover_names_the_missing_nodes() -> None:
    with pytest.raises(NoCover, match=r"nodes \[2\] are in no candidate"):
        best_cover([0, 1, 2], [(1, 1.0), (2, 1.0)])


def test_bad_candidates_are_rejected() -> None:
    with pytest.raises(ValueError, match="outside the graph"):
        best_cover([0], [(2, 1.0)])
    with pytest.raises(ValueError, match="negative cost"):
        best_cover([0], [(1, -1.0)])


def _independent_chains(chains: int, length: int) -> tuple[list[int], list[tuple[int, float]]]:
    """``chains`` chains of ``length`` nodes, numbered chain after chain, none reading
    another (a UNet's time-embedding projections): the covered sets multiply. Each node
    alone costs 1.0, each chain fused 1.5."""
    preds: list[int] = []
    candidates: list[tuple[int, float]] = []
    for c in range(chains):
        first = c * length
        for i in range(length):
            preds.append(1 << (first + i - 1) if i else 0)
            candidates.append((1 << (first + i), 1.0))
        candidates.append((((1 << length) - 1) << first, 1.5))
    return preds, candidates


def test_a_graph_too_wide_for_the_exact_search_is_covered_in_program_order() -> None:
    preds, candidates = _independent_chains(chains=6, length=2)
    exact = best_cover(preds, candidates)
    assert exact.exact and exact.states > 40
    found = best_cover(preds, candidates, max_states=40)
    assert not found.exact and found.states <= 40
    assert found.cost == pytest.approx(exact.cost) == pytest.approx(6 * 1.5)
    assert best_cover(preds, candidates, exact=False).cost == pytest.approx(exact.cost)


def test_in_program_order_a_node_the_first_node_s_group_reads_is_covered_first() -> None:
    """Node 3 reads nodes 0 and 2: the group {0, 3} waits for node 2. In program order
    node 2 is covered before it (a node the group reads) when 2 is ready; when 2 itself
    waits for node 1, the group is out of reach there and only the exact search takes it."""
    candidates = [(1 << i, 1.0) for i in range(4)] + [(1 << 0 | 1 << 3, 0.5)]
    direct = [0, 0, 0, 1 << 0 | 1 << 2]
    assert best_cover(direct, candidates, exact=False).cost == pytest.approx(2.5) == best_cover(direct, candidates).cost
    behind = [0, 0, 1 << 1, 1 << 0 | 1 << 2]
    assert best_cover(behind, candidates).cost == pytest.approx(2.5)
    assert best_cover(behind, candidates, exact=False).cost == pytest.approx(4.0)


def test_the_partitioner_searches_a_wide_graph_in_order_for_the_rest_of_the_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    from dnnc.partition import cover, memo, partitioner
    from dnnc.partition.candidates import Candidate

    preds, masks = _independent_chains(chains=7, length=2)
    candidates = [Candidate("triton", "x", (), frozenset(i for i in range(14) if m >> i & 1), cost_ms=c) for m, c in masks]
    asked: list[bool] = []
    real = cover.best_cover
    monkeypatch.setattr(cover, "EXACT_STATES", 40)
    monkeypatch.setattr(partitioner, "best_cover", lambda p, c, exact=True: asked.append(exact) or real(p, c, exact=exact))
    remeasured = [*candidates[:-1], Candidate("triton", "x", (), candidates[-1].covers, cost_ms=1.25)]
    with memo.one_compile():
        first, again = partitioner.cover_by(preds, candidates), partitioner.cover_by(preds, candidates)
        second = partitioner.cover_by(preds, remeasured)
    assert asked == [True, False] and again is first  # the same search is not run twice
    assert not first.exact and not second.exact and second.cost == pytest.approx(first.cost - 0.25)


@pytest.mark.parametrize("seed", range(30))
def test_in_program_order_the_cover_is_valid_and_never_below_the_optimum(seed: int) -> None:
    rng = random.Random(1000 + seed)
    preds, candidates = random_instance(rng, rng.randint(3, 7), rng.randint(2, 9))
    found = best_cover(preds, candidates, exact=False)
    assert found.cost >= brute_force_cover(preds, candidates) - 1e-9
    covered = 0
    for i in found.chosen:
        mask = candidates[i][0]
        assert not mask & covered
        assert all(preds[n] & ~(covered | mask) == 0 for n in range(len(preds)) if mask >> n & 1)
        covered |= mask
    assert covered == (1 << len(preds)) - 1
