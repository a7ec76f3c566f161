"""``HandedOut`` on CPU tensors: its buffers are free exactly while nothing outside
refers to them (a result or any view of it), results view the buffers as the captured
run's values did, and values outside the buffers are copied."""

from __future__ import annotations

import torch

from dnnc.runtime.handed_out import HandedOut


def _handed() -> tuple[HandedOut, torch.Tensor]:
    outside = torch.arange(3.0)
    handed = HandedOut([torch.empty(2, 3), torch.empty(4)])
    returned = [handed.buffers[0].view(6), handed.buffers[1], outside]  # as a captured run returns them
    handed.describe(returned)
    return handed, outside


def test_buffers_are_free_only_while_no_result_or_view_of_one_is_held() -> None:
    handed, _ = _handed()
    assert handed.free()
    results = handed.give()
    assert not handed.free()
    part = results[0][2:4]
    del results
    assert not handed.free(), "a view of a result still holds its buffer"
    del part
    assert handed.free()


def test_results_view_the_buffers_as_the_captured_values_did() -> None:
    handed, outside = _handed()
    handed.buffers[0].copy_(torch.arange(6.0).view(2, 3))
    handed.buffers[1].fill_(7.0)
    flat, whole, copied = handed.give()
    assert flat.shape == (6,) and torch.equal(flat, torch.arange(6.0))
    assert whole.data_ptr() == handed.buffers[1].data_ptr() and torch.equal(whole, torch.full((4,), 7.0))
    assert copied.data_ptr() != outside.data_ptr() and torch.equal(copied, outside)


def test_results_are_ordinary_tensors_even_when_made_in_inference_mode() -> None:
    with torch.inference_mode():
        handed = HandedOut([torch.empty(3)])
    handed.describe([handed.buffers[0]])
    (result,) = handed.give()
    assert not result.is_inference()
    result.add_(1)  # the caller may change it in place


def test_values_that_are_whole_buffers_are_handed_out_in_return_order() -> None:
    handed = HandedOut([torch.empty(2), torch.empty(3)])
    handed.describe([handed.buffers[1], handed.buffers[0]])
    handed.buffers[0].fill_(1.0)
    handed.buffers[1].fill_(2.0)
    first, second = handed.give()
    assert first.data_ptr() == handed.buffers[1].data_ptr() and torch.equal(first, torch.full((3,), 2.0))
    assert second.data_ptr() == handed.buffers[0].data_ptr() and torch.equal(second, torch.ones(2))
    assert first is not handed.buffers[1], "the caller gets a tensor of its own, not the buffer object"
    assert not handed.free()
    del first, second
    assert handed.free()
