"""saxpy_py's contract: inputs for a shape, the oracle, the baseline."""
import array
import random


def inputs(shape, seed):
    rng = random.Random(seed)
    n = shape["n"]
    y = array.array("f", (rng.uniform(-1, 1) for _ in range(n)))
    x = array.array("f", (rng.uniform(-1, 1) for _ in range(n)))
    return y, x


def reference(y, x):
    for i in range(len(x)):
        y[i] = 2.5 * x[i] + y[i]
    return ()


def forward(y, x):
    # the slow way: one element at a time, each read twice
    for i in range(len(x)):
        t = x[i] * 2.5
        y[i] = t + y[i] + 0.0 * x[i]
    return ()
