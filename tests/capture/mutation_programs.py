"""Programs with side effects: in-place array updates, container/attribute/global/cell mutations.

Each is registered with an argument factory; ``test_side_effects.py`` runs it plain and compiled
on copies of the same inputs and compares results and the full state of every argument (and the
module globals it touches) after each of several calls.
"""

from __future__ import annotations

import numpy as np

import npdynamo

MUTATION_PROGRAMS: list[tuple[str, object, object]] = []
COUNTER = 0
TOTAL = np.zeros(3)
SETTINGS = {"lr": 0.1, "calls": 0}
GLOBAL_NAMES = ("COUNTER", "TOTAL", "SETTINGS")


def mutates(*factories):
    def register(fn):
        for i, factory in enumerate(factories):
            MUTATION_PROGRAMS.append((f"{fn.__name__}-{i}", fn, factory))
        return fn

    return register


def a(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def params(seed=0):
    return {"w": a(4, 3, seed=seed), "b": a(3, seed=seed + 1)}


# -- optimisers ---------------------------------------------------------------------------------
@mutates(lambda: (params(), params(5), 0.1))
def sgd_dict(p, g, lr):
    for k in p:
        p[k] -= lr * g[k]


@mutates(lambda: (params(), params(5), 0.1))
def sgd_dict_rebinding(p, g, lr):
    for k in p:
        p[k] = p[k] - lr * g[k]
    return p


def adam_state(seed=0):
    p = params(seed)
    return (
        p,
        {k: np.zeros_like(v) for k, v in p.items()},
        {k: np.zeros_like(v) for k, v in p.items()},
    )


@mutates(lambda: (*adam_state(), params(7), 3))
def adam_dict(p, m, v, g, t):
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    for k in p:
        m[k] *= b1
        m[k] += (1 - b1) * g[k]
        v[k][:] = b2 * v[k] + (1 - b2) * g[k] * g[k]
        mhat = m[k] / (1 - b1**t)
        vhat = v[k] / (1 - b2**t)
        p[k] -= lr * mhat / (np.sqrt(vhat) + eps)


class Model:
    def __init__(self):
        self.w = a(3, 2)
        self.b = np.zeros(2)
        self.step = 0
        self.history = []
        self.m = np.zeros((3, 2))

    def forward(self, x):
        return x @ self.w + self.b

    def sgd(self, gw, gb, lr=0.1):
        self.w -= lr * gw
        self.b -= lr * gb
        self.step += 1


@mutates(lambda: (Model(), a(3, 2, seed=2), a(2, seed=3)))
def sgd_on_attributes(model, gw, gb):
    model.sgd(gw, gb)
    return model.step


@mutates(lambda: (Model(), a(3, 2, seed=2)))
def momentum_on_attribute(model, gw):
    model.m[:] = 0.9 * model.m + gw
    model.w -= 0.01 * model.m


@mutates(lambda: (Model(), a(5, 3)))
def history_append_graph_value(model, x):
    loss = (model.forward(x) ** 2).mean()
    model.history.append(loss)
    model.step += 1
    return loss


@mutates(lambda: ([], a(4)))
def history_append_argument(history, x):
    history.append(x.sum())
    history.append(x * 2)
    return len(history)


@mutates(lambda: ([1.0, 2.0], a(4)))
def list_read_then_append(history, x):
    last = history[-1]
    history.append(last * 2)
    return x * last


# -- counters ---------------------------------------------------------------------------------
@mutates(lambda: (a(3),))
def global_counter(x):
    global COUNTER
    COUNTER += 1
    return x * COUNTER


@mutates(lambda: (a(3),))
def global_array_accumulate(x):
    global TOTAL
    TOTAL = TOTAL + x
    return TOTAL.sum()


@mutates(lambda: (a(3),))
def global_array_in_place(x):
    TOTAL[:] += x
    return TOTAL


@mutates(lambda: (a(3),))
def global_dict_mutation(x):
    SETTINGS["calls"] += 1
    return x * SETTINGS["lr"]


class Counter:
    def __init__(self):
        self.n = 0
        self.total = 0.0


@mutates(lambda: (Counter(), a(3)))
def attribute_counter(c, x):
    c.n += 1
    c.total = c.total + 1.5
    return x * c.n


@mutates(lambda: (Counter(), a(3)))
def attribute_new_and_delete(c, x):
    c.cache = x * 2
    y = c.cache + 1
    del c.cache
    c.last = y
    return y


# -- in-place arrays -----------------------------------------------------------------------------
@mutates(lambda: (a(3), a(3, seed=1)))
def augmented_assignments(x, y):
    x += y
    x *= 2.0
    x -= 1
    x /= 3
    return x


@mutates(lambda: (a(6),))
def slice_assignment_buffer(buf):
    buf[1:3] = 0.0
    buf[-1] = buf[0] * 2
    buf[::2] += 1
    return buf.sum()


@mutates(lambda: (a(4, 5), np.array([0, 2])))
def integer_index_assignment(x, idx):
    x[idx] = -1.0
    x[:, idx] *= 2
    return x


@mutates(lambda: (a(4, 4),))
def mask_shaped_assignment(x):
    x[...] = np.where(x > 0, x, 0.0)
    return x


@mutates(lambda: (a(3), a(3, seed=1), np.zeros(3)))
def ufunc_out_argument(a1, b1, out):
    np.add(a1, b1, out=out)
    np.multiply(out, 2.0, out=out)
    return out


@mutates(lambda: (a(3),))
def out_is_input(x):
    np.exp(x, out=x)
    return x


@mutates(lambda: (a(5),))
def fill_method(x):
    x.fill(3.0)
    return x


@mutates(lambda: (a(5), a(3)))
def setitem_called_by_name(z, w):
    z.__setitem__(1, w[0])  # a write, as z[1] = w[0] (was silently dropped)
    return z


@mutates(lambda: (a(5), a(3)))
def setitem_called_through_the_class(z, w):
    np.ndarray.__setitem__(z, slice(1, 3), w[:2] * 2)
    return z + 1


@mutates(lambda: (a(3, 4),))
def view_written_through(x):
    row = x[0]
    row += 10
    col = x[:, 1]
    col *= 0
    return x.sum(), row


@mutates(lambda: (a(3, 4),))
def view_of_view(x):
    top = x[:2]
    cell = top[1]
    cell[2] = 99.0
    return top, x


@mutates(lambda: (a(4),))
def reads_after_write_see_new_value(x):
    before = x.copy()
    x += 1
    after = x * 1
    return before, after


@mutates(lambda: (a(4), 2))
def inplace_int_array(x, k):
    y = np.arange(4)
    y += k
    y[0] = 7
    return y, x


@mutates(lambda: (np.arange(5), 3))
def integer_argument_array(x, k):
    x += k
    x //= 2
    return x


@mutates(lambda: (a(3, dtype=np.float32), a(3)))
def float32_inplace_from_float64(x, y):
    x += y  # same_kind: float64 result cast into the float32 array
    return x


@mutates(lambda: (np.arange(4), 0.5))
def int_inplace_float_raises(x, s):
    x *= s  # NumPy raises: cannot cast float64 into int64 in place
    return x


@mutates(lambda: (a(3),))
def fresh_array_with_views(x):
    out = np.zeros((2, 3))
    first = out[0]
    first += x
    out[1] = first * 2
    return out, first


# -- aliasing -----------------------------------------------------------------------------------
def same_array_twice():
    x = a(3)
    return (x, x)


@mutates(same_array_twice)
def aliased_arguments(x, y):
    x += 1
    return y * 2


@mutates(lambda: (a(3), a(3, seed=1)))
def not_aliased_arguments(x, y):
    x += 1
    return y * 2


def shared_list():
    lst = []
    return (lst, lst)


@mutates(shared_list)
def aliased_lists(l1, l2):
    l1.append(1.0)
    l2.append(2.0)
    return len(l1)


def overlapping():
    x = a(6)
    return (x[:4], x[2:])


@mutates(overlapping)
def overlapping_views_written(u, v):
    u += 1
    return v * 2


# -- Python containers --------------------------------------------------------------------------
@mutates(lambda: ([1, 2, 3], a(3)))
def list_methods_on_argument(lst, x):
    lst.append(4)
    lst.insert(0, 0)
    last = lst.pop()
    lst.remove(2)
    lst[0] = 10
    del lst[1]
    lst.extend([7, 8])
    return x * last


@mutates(lambda: ({"a": 1.0, "b": 2.0}, a(3)))
def dict_methods_on_argument(d, x):
    d["c"] = 3.0
    d.update(e=5.0)
    gone = d.pop("a")
    d.setdefault("f", 6.0)
    del d["b"]
    return x * gone


@mutates(lambda: ({"a": 1.0}, a(3)))
def dict_clear_and_refill(d, x):
    d.clear()
    d["z"] = x * 2
    return len(d)


@mutates(lambda: ({1, 2}, a(3)))
def set_add(s, x):
    s.add(3)
    return len(s) * x


@mutates(lambda: ([], a(2)))
def store_new_containers(out, x):
    row = [x * 2, {"k": x + 1}]
    out.append(row)
    out.append(row)
    return out


@mutates(lambda: (Model(), a(3)))
def store_fresh_object_graph(model, x):
    model.cache = {"sq": x * x, "items": [x, x + 1]}
    return model.cache["items"][1]


# -- cells ---------------------------------------------------------------------------------------
def make_accumulator():
    total = np.zeros(3)
    count = 0

    def add(x):
        nonlocal total, count
        total = total + x
        count += 1
        return total / count

    return add


@mutates(lambda: (make_accumulator(), a(3)))
def nonlocal_through_closure(acc, x):
    return acc(x), acc(x * 2)


# -- with graph breaks ---------------------------------------------------------------------------
@mutates(lambda: (params(), params(5), []))
def mutations_around_a_break(p, g, log):
    p["w"] -= 0.1 * g["w"]
    log.append("before")
    print("break", len(log))
    p["b"] -= 0.1 * g["b"]
    log.append("after")
    return log


@mutates(lambda: (Model(), a(3, 2, seed=4)))
def attribute_then_break(model, gw):
    model.w -= gw
    model.step += 1
    npdynamo.graph_break()
    model.step += 1
    return model.w.sum()


@mutates(lambda: (a(4),))
def global_then_break(x):
    global COUNTER
    COUNTER += 1
    print("counter", COUNTER)
    COUNTER += 10
    return x * COUNTER


@mutates(lambda: (a(4), []))
def inplace_in_loop_with_break(x, trace):
    for i in range(3):
        x *= 2
        trace.append(float(x.sum()))
        x += i
    return trace


@mutates(lambda: (a(3), a(3, seed=1)))
def error_after_writes_leaves_python_state(x, y):
    x += 1
    z = x @ np.ones((4, 4))  # raises: the write above happened in Python before it
    return z


@mutates(lambda: (Model(), a(3)))
def data_dependent_update(model, x):
    if x.sum() > 0:
        model.w *= 2
    else:
        model.b += 1
    model.step += 1


# -- more realistic updates -------------------------------------------------------------------
@mutates(lambda: (params(), params(5), 0.9, {k: np.zeros_like(v) for k, v in params().items()}))
def sgd_momentum_dict(p, g, mu, vel):
    for k, w in p.items():
        vel[k] = mu * vel[k] + g[k]
        w -= 0.05 * vel[k]


@mutates(lambda: (a(8, 8),))
def simulation_step_in_place(u):
    lap = np.zeros_like(u)
    lap[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    u += 0.1 * lap
    u[0, :] = 0.0
    u[-1, :] = 0.0


@mutates(lambda: (a(5, 2), a(5, 2, seed=1), 0.01))
def particles_in_place(pos, vel, dt):
    vel *= 0.99
    vel[:, 1] -= 9.81 * dt
    pos += dt * vel
    below = pos[:, 1] < 0
    pos[:, 1] = np.where(below, -pos[:, 1], pos[:, 1])


@mutates(lambda: (Model(), a(4, 3), a(4, 2)))
def training_step_on_object(model, x, y):
    pred = model.forward(x)
    err = pred - y
    gw = x.T @ err / x.shape[0]
    gb = err.mean(axis=0)
    model.sgd(gw, gb, lr=0.05)
    model.history.append((err**2).mean())
    return model.history[-1] if False else model.step


@mutates(lambda: ({"count": 0, "sum": np.zeros(3)}, a(3)))
def running_stats_dict(stats, x):
    stats["count"] += 1
    stats["sum"] += x
    stats["mean"] = stats["sum"] / stats["count"]
    return stats["mean"]


@mutates(lambda: ([np.zeros(2), np.ones(2)], a(2)))
def list_of_arrays_updated(bufs, x):
    for buf in bufs:
        buf += x
    bufs[0][1] = -1.0
    return bufs[1]


@mutates(lambda: (a(6),))
def reversed_view_written(x):
    r = x[::-1]
    r[:2] = 0.0
    return x


@mutates(lambda: (a(2, 3), a(3)))
def broadcast_inplace(x, row):
    x += row
    x[0] *= row
    return x


class Slotted:
    __slots__ = ("w", "n")

    def __init__(self):
        self.w = np.ones(3)
        self.n = 0


@mutates(lambda: (Slotted(), a(3)))
def slots_object_attributes(s, x):
    s.w = s.w + x  # slots are not plain instance attributes: a graph break, still exact
    s.n += 1
    return s.w.sum()
