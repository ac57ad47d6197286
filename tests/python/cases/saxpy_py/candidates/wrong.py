def forward(y, x):
    for i in range(len(x)):
        y[i] = 2.0 * x[i] + y[i]
    return ()
