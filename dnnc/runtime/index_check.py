"""Out-of-range gather indices on the GPU, reported without slowing a call.

A generated kernel that gathers cannot raise: an index outside its dimension reads 0
and sets the kernel's flag, one int32 per gathering step in a buffer the executor
owns. Reading that buffer right after a call would make every call wait for the GPU.
Instead each call ends by queueing a copy of the flags to host memory, and the next
call reads the copy that has arrived (as CUDA reports a kernel's own errors at a later
call). A flag stays set until it is reported, so no hit is lost when a copy is still
in flight. ``check_now`` waits and reports at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from dnnc.errors import InputError

SLOT = 4
"""int32s per flag: each flag starts 16 bytes from the last, so a kernel's flag argument
is as aligned as its other tensors and keeps the kernel compiled with alignment hints."""


class IndexCheck:
    def __init__(self, steps: Sequence[str], device: torch.device | str):
        """``steps``: what each gathering step is, for the message (none: nothing to check)."""
        self.steps = list(steps)
        self.flags = torch.zeros(len(self.steps) * SLOT, dtype=torch.int32, device=device) if self.steps else None
        self._host: torch.Tensor | None = None
        self._arrived: torch.cuda.Event | None = None
        if self.flags is not None and self.flags.is_cuda:
            self._host = torch.zeros(self.flags.shape, dtype=self.flags.dtype, pin_memory=True)
            self._arrived = torch.cuda.Event()

    def slot(self, index: int) -> torch.Tensor:
        """The flag of the ``index``-th gathering step: what its kernel writes to."""
        assert self.flags is not None
        return self.flags[index * SLOT : index * SLOT + 1]

    def before_call(self) -> None:
        """Report what an earlier call's copy brought, if it has arrived."""
        if self._host is not None and self._arrived is not None and self._arrived.query():
            self._report(self._host.clone())

    def after_call(self) -> None:
        """Queue the copy of the flags that the next call reads; on CPU tensors (the
        Triton interpreter), where nothing is in flight, report at once."""
        if self.flags is None:
            return
        if self._host is None or self._arrived is None:
            self._report(self.flags.clone())
            return
        self._host.copy_(self.flags, non_blocking=True)
        self._arrived.record()

    def clear(self) -> None:
        """Forget what earlier runs flagged: once it is reported, or after runs on inputs
        that were not the user's (a contest's random ones)."""
        if self.flags is not None:
            self.flags.zero_()
        if self._host is not None:
            self._host.zero_()

    def check_now(self) -> None:
        """Wait for the work queued so far and report any index out of range."""
        if self.flags is not None:
            self._report(self.flags.cpu())

    def _report(self, seen: torch.Tensor) -> None:
        hits = [step for step, hit in zip(self.steps, seen[::SLOT].tolist()) if hit]
        if not hits:
            return
        self.clear()
        raise InputError(
            f"an index was out of range in {'; '.join(hits)}, on this call or one before it: the GPU kernel read 0 "
            "for it where PyTorch raises (indices must lie in [-n, n) for a dimension of n; negative ones wrap)"
        )
