"""A wrong one: the exponentials are divided by their largest value instead
of their sum (a slip between two reductions), so the row's largest output is
1 and no row sums to 1. The oracle must say INCORRECT."""
import cuda.tile as ct
import torch


@ct.kernel
def softmax_row(x, y, COLS: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, COLS),
                padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row, 0), tile=e / ct.max(e, axis=1, keepdims=True))


def forward(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    tile = 1 << (cols - 1).bit_length()
    ct.launch(torch.cuda.current_stream(), (rows, 1, 1), softmax_row,
              (x, y, tile))
    return y
