"""S5's new module: one more source file in the package (release 1.1)."""


def double(x):
    return 2 * x
