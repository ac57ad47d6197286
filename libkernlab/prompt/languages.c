/* The prompt's guide to a Python case's kernel languages: a table of which
 * language leaves which decision to the author and which to its compiler
 * (so a model picks the language by the control a kernel needs), then the
 * idioms of each language the current best code imports: how it compiles,
 * how it launches on the stream kernlab times, how it moves data.
 *
 * The idioms are the ones the bundled cases of each language use
 * (cases/add_cute, cases/softmax_cutile, tests/python/cases/softmax_torch)
 * and that ran on the GPU machine; they are written for a reader who knows
 * CUDA but not the DSL. Which languages a file imports comes from
 * kl__py_languages (python_source.c). */
#include "prompt_internal.h"

static const char table[] =
    "Pick the language by the control the kernel needs:\n"
    "| language | you decide | its compiler decides | reach for it when |\n"
    "|---|---|---|---|\n"
    "| PyTorch | which operators, in what order; torch.compile | every "
    "kernel | the baseline, or fusion torch.compile finds |\n"
    "| Triton | a program's block of data (tl.arange), masks, num_warps, "
    "num_stages, autotune configs | threads, registers, shared memory, "
    "pipelining | fused elementwise work and reductions, GEMM variants, "
    "quickly |\n"
    "| cuTile | tile shapes, how many rows or tiles a block takes, padding, "
    "the grid, hints (latency=, allow_tma=) | threads, warps, shared "
    "memory, tensor-core use | tile algorithms in few lines, one source "
    "across GPU generations |\n"
    "| CuTe DSL | threads and warps, layouts, copy atoms and their width, "
    "shared memory, TMA, MMA atoms, pipelines and barriers | registers and "
    "scheduling | Hopper and Blackwell features (TMA, wgmma, clusters), "
    "exact data movement, CUTLASS-grade GEMMs |\n"
    "| CuPy RawKernel, cpp_extension | everything CUDA C++ does | nothing "
    "more | existing CUDA C++ |\n";

static const char triton[] =
    "Triton: `@triton.jit` kernels; `tl.program_id(0)` is the program; "
    "`tl.arange(0, BLOCK)` with `BLOCK: tl.constexpr` a power of two; mask "
    "loads and stores at the edges (`mask=offs < n`, `other=`); launch as "
    "`kernel[grid](...)` (on PyTorch's current stream); `@triton.autotune` "
    "over `triton.Config`s runs in the warm-up calls; `num_warps` and "
    "`num_stages` trade occupancy for latency hiding.\n";

static const char cute[] =
    "CuTe DSL (`import cutlass.cute as cute`): `@cute.kernel` is device "
    "code, `@cute.jit` the host code that launches it with "
    "`kernel(...).launch(grid=, block=, stream=)`. Compile once per shape "
    "with `cute.compile(host_fn, *args)` (seconds: keep the result in a "
    "dict keyed by shape; the warm-up calls pay for it). Tensors come from "
    "`from_dlpack(t, assumed_align=16)` (`cutlass.cute.runtime`); their "
    "static shapes specialise the kernel (`.mark_layout_dynamic()` keeps "
    "one kernel for many). Launch on PyTorch's stream: pass "
    "`cuda.CUstream(torch.cuda.current_stream().cuda_stream)` "
    "(`import cuda.bindings.driver as cuda`) as a `cuda.CUstream` "
    "parameter. `cute.arch.thread_idx()` and `block_idx()` give indices; "
    "`if` and `for` on runtime values become device control flow, "
    "`cutlass.Constexpr` parameters and `cutlass.range_constexpr` unroll at "
    "compile time. Vectors: `cute.zipped_divide(t, (1, V))` gives each "
    "thread a (1, V) tile whose `.load()` and `.store()` move V elements "
    "at once (16 bytes is one 128-bit access); `cute.make_copy_atom` and "
    "`cute.make_tiled_copy_tv` lay threads and values over a tile; shared "
    "memory through `cutlass.utils.SmemAllocator`; TMA through "
    "`cute.nvgpu.cpasync`.\n";

static const char cutile[] =
    "cuTile (`import cuda.tile as ct`): a `@ct.kernel` function runs once "
    "per block; `ct.bid(0)` is the block's index. `ct.load(a, index=(i, j), "
    "shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)` reads tile (i, j) "
    "of `a` cut into TM x TN tiles (NEG_INF padding for a max); "
    "`ct.store(a, index=, tile=)` writes one, clipped at the edge. Tile "
    "shapes are compile-time: parameters annotated `ct.Constant[int]`, "
    "powers of two; each new set of constants compiles once on its first "
    "launch (tileiras, seconds: the warm-up calls pay for it). Tile math: "
    "operators, `ct.exp`, reductions `ct.max(t, axis=1, keepdims=True)` "
    "and `ct.sum`, `ct.astype`, `ct.mma` and `ct.matmul` on tensor cores. "
    "Launch with `ct.launch(torch.cuda.current_stream(), grid, kernel, "
    "(args...))`; torch tensors pass as they are. Hints: `latency=` on a "
    "load, `allow_tma=`, `check_bounds=False` where no tile crosses an "
    "edge.\n";

int kl__py_language_guide(kl_buf *out, const char *src) {
  unsigned seen = kl__py_languages(src);
  kl__buf_puts(out, table);
  if (seen & (KL__PY_TRITON | KL__PY_CUTE | KL__PY_CUTILE))
    kl__buf_puts(out, "\nIdioms of the languages this case uses:\n");
  if (seen & KL__PY_TRITON) kl__buf_printf(out, "- %s", triton);
  if (seen & KL__PY_CUTE) kl__buf_printf(out, "- %s", cute);
  if (seen & KL__PY_CUTILE) kl__buf_printf(out, "- %s", cutile);
  return kl__buf_status(out);
}
