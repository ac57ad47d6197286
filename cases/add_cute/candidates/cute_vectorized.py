"""Eight neighbouring elements per thread: the matrices are divided into
(1, 8) tiles (cute.zipped_divide), so a thread loads its tile of A and of B
as two 128-bit accesses each, adds them in registers and stores the tile.
The grid shrinks eightfold; every access is coalesced and full width."""
import cuda.bindings.driver as cuda
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

THREADS = 256
VEC = 8


@cute.kernel
def add_tiles(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    rows, tiles = gA.shape[1]
    if i < rows * tiles:
        tile = (None, (i // tiles, i % tiles))
        gC[tile].store(gA[tile].load() + gB[tile].load())


@cute.jit
def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
        stream: cuda.CUstream):
    gA = cute.zipped_divide(mA, (1, VEC))
    gB = cute.zipped_divide(mB, (1, VEC))
    gC = cute.zipped_divide(mC, (1, VEC))
    work = cute.size(gC, mode=[1])
    add_tiles(gA, gB, gC).launch(grid=((work + THREADS - 1) // THREADS, 1, 1),
                                 block=(THREADS, 1, 1), stream=stream)


_compiled = {}


def forward(a, b):
    if a.shape[-1] % VEC:
        raise ValueError("columns must be a multiple of %d" % VEC)
    c = torch.empty_like(a)
    args = [from_dlpack(t, assumed_align=16) for t in (a, b, c)]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    fn = _compiled.get(a.shape)
    if fn is None:
        fn = _compiled[a.shape] = cute.compile(add, *args, stream)
    fn(*args, stream)
    return c
