"""The cheapest cover of a dataflow graph by candidate groups.

Nodes are numbered in a topological order; ``preds[i]`` is the bitmask of the
nodes ``i`` reads. A candidate is a set of nodes (a bitmask) and a cost. A cover
is a set of pairwise disjoint candidates whose union is every node and whose
contraction is acyclic (every group can run once the groups it reads have run).

The search is a shortest path over *covered sets* (as in TVM's Collage): from a
covered set ``S`` one may run any candidate disjoint from ``S`` whose outside
inputs are all in ``S``. Every acyclic cover is such a path (run its groups in a
topological order of the contraction), and the cost still to pay from ``S``
depends on ``S`` alone, so Dijkstra with ``S`` as the state finds the optimum.
A ready candidate's first node is itself ready, so only candidates starting at a
ready node are tried. Most graphs in ML models are narrow (a chain with short side
branches), so the number of covered sets seen stays small; past a cap, the search
runs again covering the nodes in program order (``best_cover``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from dnnc.errors import DnncError


class NoCover(DnncError):
    """No combination of the candidates covers the graph."""


@dataclass(frozen=True)
class Cover:
    cost: float
    chosen: tuple[int, ...]
    """Indices into the candidate list, in an order the groups can run in."""
    states: int = 0
    """Covered sets the search expanded (how hard the instance was)."""
    exact: bool = True
    """False: the search ran in program order, the exact one having been too wide."""


EXACT_STATES = 20_000
"""The exact search's cap (about 30 µs a covered set): BERT needs 2,811, Llama 16,332,
ResNet-50 240; an Inception v3 35,372 (the search in program order comes within 4%
of its optimum), a UNet2D and a SegFormer pass 300,000."""
MAX_STATES = 500_000


def best_cover(
    preds: Sequence[int], candidates: Sequence[tuple[int, float]], max_states: int = MAX_STATES, exact: bool = True
) -> Cover:
    """The cheapest acyclic cover. Where the exact search passes ``EXACT_STATES``
    covered sets (a graph with many independent branches: a UNet's time-embedding
    projections, one per block, can run at any point, so the covered sets multiply),
    or ``exact`` is off, the search runs in program order (``_search(in_order=True)``,
    ``Cover.exact`` False): the cheapest cover among those that always cover the first
    uncovered node next, or first a ready node a group starting there reads (UNet2D:
    1,363 covered sets; an EVA-02 ViT, whose rotary embeddings interleave the query and
    key branches: 1,485, the exact optimum, which the exact search took 157,615 for)."""
    n = len(preds)
    full = (1 << n) - 1
    succs = [0] * n
    for node, mask in enumerate(preds):
        for p in _bits(mask):
            succs[p] |= 1 << node
    starting_at: list[list[int]] = [[] for _ in range(n)]
    reads: list[int] = []
    feeds: list[int] = []
    for index, (mask, cost) in enumerate(candidates):
        if mask == 0 or mask & ~full:
            raise ValueError(f"candidate {index} covers nodes outside the graph (mask {mask:#x})")
        if cost < 0:
            raise ValueError(f"candidate {index} has a negative cost {cost}")
        starting_at[_lowest(mask)].append(index)
        outside = fed = 0
        for node in _bits(mask):
            outside |= preds[node]
            fed |= succs[node]
        reads.append(outside & ~mask)
        feeds.append(fed & ~mask)
    needs = [0] * n
    for node, indices in enumerate(starting_at):
        for index in indices:
            needs[node] |= reads[index]
    sources = sum(1 << node for node, mask in enumerate(preds) if not mask)
    graph = _Graph(preds, candidates, starting_at, reads, feeds, needs, sources)
    if exact:
        try:
            return _search(graph, min(EXACT_STATES, max_states), in_order=False)
        except _TooWide:
            pass
    try:
        return _search(graph, max_states, in_order=True)
    except _TooWide:
        raise NoCover(f"the cover search passed {max_states} states, in program order too; the graph is too wide") from None


class _TooWide(Exception):
    pass


@dataclass(frozen=True)
class _Graph:
    preds: Sequence[int]
    candidates: Sequence[tuple[int, float]]
    starting_at: list[list[int]]
    """Candidates by their lowest node."""
    reads: list[int]
    """Per candidate: the nodes outside it that it reads."""
    feeds: list[int]
    """Per candidate: the nodes outside it that read it."""
    needs: list[int]
    """Per node: the nodes the candidates starting at it read."""
    sources: int
    """Nodes that read no node."""


def _search(graph: _Graph, max_states: int, in_order: bool) -> Cover:
    """Dijkstra over covered sets; ``in_order``: only the lowest uncovered node (always
    ready: the nodes before it are covered) or a ready node that a candidate starting
    there reads is covered next. A covered set carries its *frontier*, the uncovered
    nodes that read a covered node or none, so finding the ready nodes looks at those
    few rather than at every uncovered node."""
    preds, candidates, reads = graph.preds, graph.candidates, graph.reads
    n = len(preds)
    full = (1 << n) - 1
    best: dict[int, float] = {0: 0.0}
    frontier: dict[int, int] = {0: graph.sources}
    came_from: dict[int, tuple[int, int]] = {}
    tie = itertools.count()
    heap: list[tuple[float, int, int]] = [(0.0, next(tie), 0)]
    done: set[int] = set()
    while heap:
        cost, _, covered = heapq.heappop(heap)
        if covered in done:
            continue
        if covered == full:
            return Cover(cost, _path(came_from, covered), len(done), exact=not in_order)
        done.add(covered)
        if len(done) > max_states:
            raise _TooWide
        near = frontier[covered]
        if in_order:
            first = _lowest(full & ~covered)
            nodes = [first, *_bits(graph.needs[first] & near & ~(1 << first))]
        else:
            nodes = _bits(near)
        for node in nodes:
            if preds[node] & ~covered:
                continue  # not ready
            for index in graph.starting_at[node]:
                mask, step = candidates[index]
                if mask & covered or reads[index] & ~covered:
                    continue
                nxt = covered | mask
                total = cost + step
                if total < best.get(nxt, float("inf")):
                    best[nxt] = total
                    frontier[nxt] = (near | graph.feeds[index]) & ~nxt
                    came_from[nxt] = (covered, index)
                    heapq.heappush(heap, (total, next(tie), nxt))
    uncovered_nodes = [i for i in range(n) if not any(m >> i & 1 for m, _ in candidates)]
    hint = f"; nodes {uncovered_nodes} are in no candidate" if uncovered_nodes else ""
    raise NoCover(f"no acyclic cover of {n} nodes by {len(candidates)} candidates{hint}")


def brute_force_cover(preds: Sequence[int], candidates: Sequence[tuple[int, float]]) -> float:
    """The optimum by trying every subset of candidates (tests, tiny graphs only)."""
    n = len(preds)
    full = (1 << n) - 1
    best = float("inf")
    for size in range(1, len(candidates) + 1):
        for subset in itertools.combinations(range(len(candidates)), size):
            masks = [candidates[i][0] for i in subset]
            if sum(masks) != full or _overlap(masks) or not _acyclic(preds, masks):
                continue
            best = min(best, sum(candidates[i][1] for i in subset))
    return best


def _overlap(masks: list[int]) -> bool:
    seen = 0
    for m in masks:
        if seen & m:
            return True
        seen |= m
    return False


def _acyclic(preds: Sequence[int], masks: list[int]) -> bool:
    group = {node: g for g, m in enumerate(masks) for node in _bits(m)}
    deps = [{group[p] for node in _bits(m) for p in _bits(preds[node]) if group[p] != g} for g, m in enumerate(masks)]
    finished: set[int] = set()
    while len(finished) < len(masks):
        ready = [g for g in range(len(masks)) if g not in finished and deps[g] <= finished]
        if not ready:
            return False
        finished.update(ready)
    return True


def _path(came_from: dict[int, tuple[int, int]], covered: int) -> tuple[int, ...]:
    chosen = []
    while covered:
        covered, index = came_from[covered]
        chosen.append(index)
    return tuple(reversed(chosen))


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _bits(mask: int) -> list[int]:
    """The set bits' positions, lowest first. A graph of hundreds of nodes has long
    masks: a sparse one (a frontier) is peeled bit by bit, a dense one (the uncovered
    nodes) read off its binary text, each the faster for its kind."""
    if mask.bit_count() <= 16:
        out = []
        while mask:
            low = mask & -mask
            out.append(low.bit_length() - 1)
            mask ^= low
        return out
    return [i for i, bit in enumerate(reversed(bin(mask)[2:])) if bit == "1"]
