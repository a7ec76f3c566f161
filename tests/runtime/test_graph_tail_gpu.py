"""A program whose last kernel writes a large output (a language model's logits) runs
that kernel after each CUDA-graph replay, into memory of the caller's own: outputs
match eager on the static-buffer and the direct paths, a later call never rewrites an
earlier call's output, a binding still replays the whole program, and a small output
stays inside the graph."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.runtime.cuda_graph import TAIL_MIN_BYTES, CudaGraphRunner

pytestmark = pytest.mark.gpu


class LmHead(torch.nn.Module):
    """Embedding, a normalised block, and a head onto a large vocabulary, reshaped back
    to (batch, tokens, vocab) as transformers' heads return it."""

    def __init__(self, vocab: int, hidden: int = 256):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.mlp = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        h = h + torch.relu(self.mlp(self.norm(h)))
        return self.head(h)


def _compiled(vocab: int) -> tuple[torch.nn.Module, torch.Tensor, dnnc.CompiledModule]:
    model = LmHead(vocab).eval().to("cuda", torch.float16)
    tokens = torch.randint(0, vocab, (4, 128), device="cuda")
    return model, tokens, dnnc.compile(model, (tokens,), device="cuda")  # type: ignore[return-value]


def test_the_logits_are_written_after_the_replay_into_the_callers_memory() -> None:
    vocab = 32768  # 4 x 128 x 32768 fp16: 32 MiB of logits
    assert 4 * 128 * vocab * 2 >= TAIL_MIN_BYTES
    model, tokens, compiled = _compiled(vocab)
    runner = compiled._runner
    assert isinstance(runner, CudaGraphRunner)
    assert runner.tail < len(compiled._executor.steps), "the head runs after the replay"
    fresh = [tokens, torch.randint(0, vocab, (4, 128), device="cuda")]
    with torch.no_grad():
        expected = [model(t) for t in fresh]
    outs = [compiled(t) for t in (*fresh, fresh[0], fresh[0], fresh[0])]  # static path, then direct graphs
    assert runner.captured == 1 and runner.captured_direct == 1
    for out, want in zip(outs, [*expected, expected[0], expected[0], expected[0]]):
        torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)
    ptrs = {o.untyped_storage().data_ptr() for o in outs}
    assert len(ptrs) == len(outs), "every call's logits are memory of their own"
    assert not outs[0].is_inference() and outs[0].shape == (4, 128, vocab)
    kept = outs[0].clone()
    compiled(fresh[1])
    assert torch.equal(outs[0], kept), "a later call leaves an earlier output alone"
    binding = compiled.bind(fresh[1])
    binding.replay()
    torch.testing.assert_close(binding.outputs, expected[1], rtol=2e-2, atol=2e-2)


def test_a_small_output_stays_in_the_graph() -> None:
    _, _, compiled = _compiled(1024)  # 1 MiB of logits
    assert compiled._runner.tail == len(compiled._executor.steps)
