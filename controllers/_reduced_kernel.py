"""Input validation of :meth:`idyn.controllers.Controller.compute`, compiled (one pass over its vectors).
Cached on disk (:mod:`idyn.jit`)."""
from __future__ import annotations

from idyn.jit import cached_jit
from idyn.validation import finite


@cached_jit
def all_finite(a, b, c, d, e):
    """Whether every entry of the vectors ``a`` ... ``e`` is finite (:func:`idyn.validation.finite`).
    Five float vectors always (pad with empty ones): numba cannot cache a variant with omitted
    array arguments."""
    return finite(a) and finite(b) and finite(c) and finite(d) and finite(e)
