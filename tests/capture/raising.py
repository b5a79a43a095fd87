"""Programs that raise, kept out of test modules so pytest does not rewrite their asserts."""


def g_assert(x, n):
    assert n > 0, "n must be positive"
    return x * n
