"""A gather index out of range in a generated kernel is reported, not read silently:
the kernel reads 0 and sets its step's flag, and the call after it (at once on CPU
tensors, where nothing is in flight) raises naming the step. On the CPU through
Triton's interpreter; the GPU test checks the deferred report and ``check_indices``."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dnnc
from dnnc.backends.reference import ReferenceExecutor
from dnnc.backends.triton import INDEX_FLAG, GroupInfo, generate, is_triton_group
from dnnc.backends.triton.configs import candidates
from dnnc.errors import InputError
from dnnc.pipeline import lower_for_gpu, to_canonical_tcp
from dnnc.runtime.gpu_executor import GpuExecutor
from tests.numerics import assert_matches


class Lookup(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(10, 8)

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        picked = torch.take_along_dim(x, ids[:, :1].clamp(-1, 5), dim=1)
        return torch.relu(self.table(ids)) * 2 + picked.unsqueeze(-1)


def _lowered(rng: torch.Generator) -> tuple[object, list[torch.Tensor]]:
    ids = torch.randint(0, 10, (3, 4), generator=rng)
    x = torch.randn(3, 6, generator=rng)
    program = to_canonical_tcp(Lookup().eval(), (ids, x))
    return program, [ids, x]


def test_a_gathering_kernel_takes_an_index_flag(rng: torch.Generator) -> None:
    program, _ = _lowered(rng)
    lower_for_gpu(program, backends=["triton"])
    groups = [op for op in program.entry.body.block.ops if is_triton_group(op)]
    sources = [generate(g, candidates(GroupInfo.of(g))[0]) for g in groups]
    flagged = [s for s in sources if INDEX_FLAG in s.signature]
    assert flagged and all(list(s.signature)[-1] == INDEX_FLAG for s in flagged)
    assert all("tl.store(index_flag + " in s.text for s in flagged)
    assert all("tl.store(index_flag" not in s.text for s in sources if s not in flagged)


@pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter run; on a GPU the GPU test covers this")
def test_an_index_out_of_range_is_reported_and_cleared(rng: torch.Generator) -> None:
    program, (ids, x) = _lowered(rng)
    expected = ReferenceExecutor(program).run([ids, x])
    lower_for_gpu(program, backends=["triton"])
    executor = GpuExecutor(program, "cpu")
    check = executor.index_check
    assert check.flags is not None and len(check.steps) >= 1
    kernels = [s.kernel for s in executor.steps if getattr(s.kernel, "index_flag", None) is not None]
    assert all(k.index_flag.data_ptr() % 16 == 0 for k in kernels)  # aligned like the other arguments
    (got,) = executor.run([ids, x])
    check.after_call()  # in range: nothing to say
    assert_matches(got, expected[0], torch.float32)
    bad = ids.clone()
    bad[1, 2] = 12
    executor.run([bad, x])
    with pytest.raises(InputError, match=r"index was out of range in step \d+ \(.*tcp.gather from 10x8 along axis 0"):
        check.after_call()
    assert not check.flags.any()  # reported once, then cleared
    executor.run([ids, x])
    check.after_call()
    executor.run([ids.sub(10), x])  # an embedding takes no negative index (PyTorch raises too)
    with pytest.raises(InputError, match="out of range"):
        check.after_call()
    executor.run([bad, x])
    check.clear()  # what runs on inputs not the user's (a contest's) flagged is forgotten
    check.after_call()


@pytest.mark.gpu
def test_on_the_gpu_a_later_call_or_check_indices_reports_it(rng: torch.Generator) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU")
    model = Lookup().eval().cuda()
    ids = torch.randint(0, 10, (3, 4), generator=rng).cuda()
    x = torch.randn(3, 6, generator=rng).cuda()
    compiled = dnnc.compile(model, (ids, x), device="cuda")
    torch.testing.assert_close(compiled(ids, x), model(ids, x))
    compiled.check_indices()
    bad = ids.clone()
    bad[0, 0] = 10
    compiled(bad, x)  # enqueued without waiting: the report comes later
    with pytest.raises(InputError, match="index was out of range"):
        compiled.check_indices()
    torch.testing.assert_close(compiled(ids, x), model(ids, x))
    compiled.check_indices()  # cleared once reported
    compiled(bad, x)
    torch.cuda.synchronize()
    with pytest.raises(InputError, match="index was out of range"):
        compiled(ids, x)  # the copy of the earlier call's flags has arrived by now


def test_each_step_has_its_own_aligned_flag_and_only_hit_steps_are_named() -> None:
    from dnnc.runtime.index_check import IndexCheck

    check = IndexCheck(["step 0 (a)", "step 3 (b)", "step 7 (c)"], "cpu")
    slots = [check.slot(i) for i in range(3)]
    assert [s.data_ptr() - slots[0].data_ptr() for s in slots] == [0, 16, 32]
    check.after_call()
    slots[1].fill_(1)
    with pytest.raises(InputError) as info:
        check.after_call()
    assert "step 3 (b)" in str(info.value) and "step 0" not in str(info.value) and "step 7" not in str(info.value)
    check.after_call()  # cleared
    IndexCheck([], "cpu").after_call()  # nothing gathers: nothing to do
