"""The value model is exact or breaks: results keep CPython's types, reprs, identities, iterator
states and exceptions (each case once found wrong by a user), on the eager backend and a few on
numba."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fidelity import check_fidelity


# -- dict views and keyword arguments of builtins --------------------------------------------
def dict_views(d):
    return d.keys(), d.values(), d.items()


def dict_keys_minus(d):
    return d.keys() - {"a"}


def dict_view_ops(d):
    k = d.keys()
    return len(k), "a" in k, list(d.items()), k & {"b", "z"}, list(reversed(d.keys()))


def int_with_base():
    return int("100", base=2), int("ff", 16)


# -- iterators -------------------------------------------------------------------------------
def enumerate_reversed(xs):
    return enumerate(xs), reversed(xs)


def enumerate_partly(xs):
    e = enumerate(xs, 1)
    first = next(e)
    return first, e


def exhausted_list_iterator(xs):
    it = iter(xs)
    for _ in it:
        pass
    return it


def exhausted_then_appended(xs):
    it = iter(xs)
    for _ in it:
        pass
    xs.append(9)
    return list(it)


def iterator_from_outside(it):
    first = next(it)
    return first, it


def zip_map_filter(xs, ys):
    return zip(xs, ys), map(abs, xs), filter(None, ys)


# -- user special methods --------------------------------------------------------------------
class Rat:
    def __init__(self, num, den):
        self.num, self.den = num, den

    def __eq__(self, other):
        if isinstance(other, int):
            return self.num == other * self.den
        return self.num * other.den == other.num * self.den

    def __radd__(self, other):
        return Rat(self.num + other * self.den, self.den)

    def __repr__(self):
        return f"Rat({self.num}, {self.den})"


class Falsy:
    def __bool__(self):
        return False


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = None


class Anything:
    """Answers any attribute name (a proxy, a config object)."""

    def __getattr__(self, name):
        if name.startswith("__"):  # lets copy.deepcopy work on it
            raise AttributeError(name)
        return 42


def rat_radd_eq(r):
    return (1 + r) == 2


def bool_branch(obj):
    return "yes" if obj else "no"


def always_equal(e):
    return e == 5, [e] == [5], 5 == e


def getattr_object(obj):
    return obj.fn + 1


def getattr_object_array(obj, x):
    return x * obj.scale


# -- identity --------------------------------------------------------------------------------
def sorted_identity(L):
    s = sorted(L)
    return s, s[1] is L[0]


def max_identity(L):
    return max(L), min(L), max(L) is L[0]


def tuple_times_one(t):
    u = t * 1
    return u, u is t


def returns_items(L, t):
    return L[0], t[0], L, t


def iterator_returned_across_a_break(S, k):
    # ``r`` is dead after its load: at the break it lives only on the stack, not as a loop's
    # iterator, so it must come back as the same kind of iterator in the same state
    r = iter(range(k))
    next(r)
    return r, list(S)


def loop_iterator_returned_after_a_break(k, x):
    it = iter(range(k))
    for v in it:
        print(v)
        if v == 1:
            break
    return it, x


def array_powers(z):
    # ndarray.__pow__ calls square / reciprocal / sqrt for the Python int 2 / -1 and the float
    # 0.5 (complex results differ from np.power in the last bits); other exponents: power
    w = z.copy()
    w **= 2
    return z**2, z**2.0, z**0.5, z**-1, z**-1.0, z**1, z**3, np.power(z, 2), w


# -- attribute errors ------------------------------------------------------------------------
def list_ndim(x):
    if x.ndim == 2:
        return "matrix"
    return "other"


# -- numeric kernels -------------------------------------------------------------------------
def im2col(img, kh, kw, stride=1, pad=0):
    N, C, H, W = img.shape
    Ho = (H + 2 * pad - kh) // stride + 1
    Wo = (W + 2 * pad - kw) // stride + 1
    img = np.pad(img, [(0, 0), (0, 0), (pad, pad), (pad, pad)], "constant")
    cols = np.empty((N, C, kh, kw, Ho, Wo))
    for y in range(kh):
        y_max = y + stride * Ho
        for x in range(kw):
            x_max = x + stride * Wo
            cols[:, :, y, x, :, :] = img[:, :, y:y_max:stride, x:x_max:stride]
    cols = cols.transpose(0, 4, 5, 1, 2, 3).reshape(N * Ho * Wo, -1)
    return cols, Ho, Wo


def im2col_nopad(img, kh, kw, stride=1):
    N, C, H, W = img.shape
    Ho = (H - kh) // stride + 1
    Wo = (W - kw) // stride + 1
    cols = np.empty((N, C, kh, kw, Ho, Wo))
    for y in range(kh):
        y_max = y + stride * Ho
        for x in range(kw):
            x_max = x + stride * Wo
            cols[:, :, y, x, :, :] = img[:, :, y:y_max:stride, x:x_max:stride]
    cols = cols.transpose(0, 4, 5, 1, 2, 3).reshape(N * Ho * Wo, -1)
    return cols, Ho, Wo


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def lu_inplace(A):
    N = A.shape[0]
    for i in range(N):
        for j in range(i + 1, N):
            A[j, i] /= A[i, i]
            A[j, i + 1 :] -= A[j, i] * A[i, i + 1 :]
    return A


def _spd(n):
    rng = np.random.default_rng(0)
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


#: array kernels both backends run
KERNELS = [
    (im2col_nopad, (np.arange(2 * 3 * 5 * 5, dtype=float).reshape(2, 3, 5, 5), 3, 3)),
    (go_fast, (np.arange(36.0).reshape(6, 6) / 36,)),
]

CASES = [
    (dict_views, ({"a": 1, "b": 2},)),
    (dict_keys_minus, ({"a": 1, "b": 2},)),
    (dict_view_ops, ({"a": 1, "b": 2},)),
    (int_with_base, ()),
    (enumerate_reversed, ([1.5, 2.5],)),
    (enumerate_partly, ([1, 2, 3],)),
    (exhausted_list_iterator, ([1, 2],)),
    (exhausted_then_appended, ([1, 2],)),
    (iterator_from_outside, (iter([4, 5, 6]),)),
    (zip_map_filter, ([1, -2], [0, 3])),
    (rat_radd_eq, (Rat(1, 1),)),
    (bool_branch, (Falsy(),)),
    (bool_branch, (Sized(0),)),
    (bool_branch, (Sized(3),)),
    (always_equal, (AlwaysEqual(),)),
    (getattr_object, (Anything(),)),
    (getattr_object_array, (Anything(), np.arange(3.0))),
    (sorted_identity, ([1.1, 0.5],)),
    (max_identity, ([2.5, 1.5, 0.25],)),
    (tuple_times_one, ((1.5, [2]),)),
    (returns_items, ([1.5, [2]], (3.5, "x"))),
    (iterator_returned_across_a_break, ({"a", "x"}, 4)),
    (loop_iterator_returned_after_a_break, (4, np.ones(2))),
    (array_powers, (np.array([0.5 + 2j, -1.25 + 0.75j, 3.0 - 0.5j, 1e-3 + 7j]),)),
    (array_powers, (np.array([0.5 + 2j, -1.25 + 0.75j, 3.0 - 0.5j], dtype=np.complex64),)),
    (array_powers, (np.array([0.5, 1.25, 3.0, 7.5]),)),
    (list_ndim, ([[1, 2]],)),
    (list_ndim, (np.zeros((2, 2)),)),
    (im2col, (np.arange(2 * 3 * 5 * 5, dtype=float).reshape(2, 3, 5, 5), 3, 3)),
    (im2col, (np.arange(1 * 2 * 6 * 6, dtype=float).reshape(1, 2, 6, 6), 2, 2, 2, 1)),
    *KERNELS,
    (lu_inplace, (_spd(5),)),
]


def _each(cases):
    return pytest.mark.parametrize(
        "fn,args", cases, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(cases)])


@_each(CASES)
def test_eager_matches_python(fn, args):
    check_fidelity(fn, *args, calls=2)


NUMBA_CASES = [
    (dict_keys_minus, ({"a": 1, "b": 2},)),
    (rat_radd_eq, (Rat(1, 1),)),
    (sorted_identity, ([1.1, 0.5],)),
    *KERNELS,
    (lu_inplace, (_spd(4),)),
]


@_each(NUMBA_CASES)
def test_numba_matches_python(fn, args):
    pytest.importorskip("numba")
    check_fidelity(fn, *args, backend="numba", calls=1)


def test_go_fast_large():
    """2000 unrolled iterations pass the graph op limit: the result must be right anyway."""
    a = np.arange(2000.0 * 2000).reshape(2000, 2000) / 4e6
    check_fidelity(go_fast, a, calls=1)


class AnswersEverything:
    """``__getattr__`` answers every name, dunders included (the object cannot be deep-copied,
    so it is compared by hand)."""

    def __getattr__(self, name):
        return 42


def test_getattr_everything_object_runs_as_python():
    import npdynamo

    obj = AnswersEverything()
    assert npdynamo.compile(getattr_object)(obj) == getattr_object(obj) == 43
