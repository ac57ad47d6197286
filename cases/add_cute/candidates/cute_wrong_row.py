"""A wrong one, as a slip in index arithmetic makes it: the row is taken
modulo the row count instead of divided by the row length, so most threads
add the wrong pair of elements. The oracle must say INCORRECT."""
import cuda.bindings.driver as cuda
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    m, n = gA.shape
    if i < m * n:
        row, col = i % m, i % n
        gC[row, col] = gA[row, col] + gB[row, col]


@cute.jit
def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
        stream: cuda.CUstream):
    m, n = mA.shape
    add_kernel(mA, mB, mC).launch(grid=((m * n + THREADS - 1) // THREADS, 1, 1),
                                  block=(THREADS, 1, 1), stream=stream)


_compiled = {}


def forward(a, b):
    c = torch.empty_like(a)
    args = [from_dlpack(t, assumed_align=16) for t in (a, b, c)]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    fn = _compiled.get(a.shape)
    if fn is None:
        fn = _compiled[a.shape] = cute.compile(add, *args, stream)
    fn(*args, stream)
    return c
