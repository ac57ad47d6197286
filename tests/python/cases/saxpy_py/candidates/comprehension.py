import array


def forward(y, x):
    y[:] = array.array("f", [2.5 * b + a for a, b in zip(y, x)])
    return ()
