"""The friction-pyramid LCP of Anitescu and Potra (paper eqs. 52-56, 64), built in one place.

For m contacts with contact-space rows ``J = [N; S; T]`` (3m x nv), the Delassus matrix
``W = J M^-1 J^T`` and the free contact velocity ``u = J v*``, the pyramid's edges
``D = [S_e; -S_e; T_e; -T_e]`` of the ``edged`` contacts (Sec. 5.1) and ``E`` the block of
identities that sums each contact's four edges, the LCP over ``z = [f_N; f_F; lambda]`` is::

    w_N      = N v+ + b_N + C f_N        >= 0  _|_  f_N    >= 0     (eqs. 35-36, 54)
    w_F      = D v+ + E lambda           >= 0  _|_  f_F    >= 0     (eq. 55)
    w_lambda = mu f_N - E^T f_F          >= 0  _|_  lambda >= 0     (eq. 56)

with ``v+ = v* + M^-1 J^T f``: ``Q = [[H W H^T + C, E], [mu, -E^T, 0]]``, ``r = [H u + b; 0]``
for ``H = [N; D]`` in contact-space coordinates. The tangential rows ``G`` of contacts held
without slip are equalities ``G v+ = 0`` (paper Sec. 4.4), eliminated before the LCP is formed
by a Schur complement of W (``W_GG`` must be nonsingular: Algorithm 1 picks independent rows).

Its users:

* :mod:`idyn.impact`, the passive touchdown impact of the controllers and of idyn.sim: every
  contact edged (mu = inf enters as :data:`idyn.contact.NO_SLIP_MU`), no equalities,
  ``b_N = max(phi, 0) / dt``, ``C = 0``, ``v* = v``;
* idyn.sim's ``ap-lcp``, ``noslip`` and ``penalty`` models
  (:class:`idyn.sim.contact_models.AnitescuPotra`): no-slip contacts as equalities,
  ``b_N = phi / dt`` (penalty: a spring-damper's b_N and C), warm-started from the last basis;
* idyn.sim's ``qp`` model uses :class:`Pyramid`'s signed selection for its QP over [f_N; f_F].

``lcp-coulomb`` does not build it here: its LCP is the Appendix C reduction of the inverse
dynamics MLCP (the actuated rows are unknown torques, not given forces), see
:mod:`idyn.controllers.lcp_coulomb`, "One pyramid builder?".

How. ``H`` is a signed selection of the rows ``[N; S; T]``, so its blocks are gathered from W,
never multiplied (:class:`Pyramid`). The LCP is solved equilibrated, ``z = s z'``,
``(s Q s) z' + s r = s w``, s > 0: the impulse rows scaled to unit diagonal, the lambda rows
(zero diagonal, velocity units) by the square root of the mean impulse-row diagonal, which puts
their couplings E near one. The solutions are unchanged, but Lemke's ratio tests compare like
with like: unscaled, a degenerate contact (f_N = 0, lambda free) can end Lemke's path on a ray
and the regularised fallback then returns a huge lambda that passes the scale-relative residual
check. The arithmetic is compiled (:mod:`idyn.kernels`).
"""
from __future__ import annotations

import numpy as np

from .kernels import equilibrate, pyramid_impulses, pyramid_lcp

#: no equality rows, no compliance, no factor of W_GG (arguments of :meth:`PyramidLCP.build`)
NO_ROWS = np.zeros(0, dtype=np.intp)
NO_COMPLIANCE = np.zeros(0)
NO_FACTOR = np.zeros((0, 0))


class Pyramid:
    """Where the friction pyramid sits in contact space, for m contacts of which ``edged``
    (indices) have pyramid edges.

    [N, D] with D = [S_e; -S_e; T_e; -T_e] is a signed selection of the contact-space rows
    [N; S; T]: ``rows`` (m + 4 me) are the contact-space rows of its entries and ``sign`` their
    signs, so its block of W is ``sign sign^T W[rows, rows]`` and its free velocity
    ``sign * u[rows]``, gathered, never multiplied (H W H^T without H). ``R`` are
    the contact-space rows [N, S_e, T_e] and ``sel`` the same selection in R-space (for a reduced
    Wr over R). Built once per contact layout and reused while the layout lasts.
    """

    def __init__(self, m: int, edged: np.ndarray):
        me = edged.size
        ie = np.arange(me)
        self.m, self.edged, self.top = m, edged, m + 4 * me
        self.R = np.concatenate((np.arange(m), m + edged, 2 * m + edged))
        self.sel = np.concatenate((np.arange(m), m + ie, m + ie, m + me + ie, m + me + ie))
        self.sign = np.ones(self.top)
        self.sign[m + me:m + 2 * me] = self.sign[m + 3 * me:] = -1.0
        self.rows = self.R[self.sel]
        #: (column, edged contact) of each edge's entry in E (each contact's 4 edges, Sec. 5.1)
        self.edge_columns = m + np.arange(4 * me)
        self.edge_contacts = np.tile(ie, 4)


class PyramidLCP(Pyramid):
    """The LCP of the module docstring for one layout: z = [f_N, f_F, lambda] (n entries), its
    constant E / -E^T entries in place in ``Q`` (mu goes to row top + k, column edged[k]).

    The work arrays (every entry but the constant ones of ``Q`` and ``r`` is written by each
    :meth:`build`; read them before the next build): ``Q``, ``r`` the LCP, ``s`` the scales, ``Qs``, ``rs`` the
    equilibrated LCP, ``z``, ``w`` room for a guessed solution."""

    def __init__(self, m: int, edged: np.ndarray):
        super().__init__(m, edged)
        me, top = self.edged.size, self.top
        self.n = n = top + me
        self.Q = np.zeros((n, n))
        self.Q[self.edge_columns, top + self.edge_contacts] = 1.0
        self.Q[top + self.edge_contacts, self.edge_columns] = -1.0
        self.r = np.zeros(n)        # its lambda rows stay zero
        self.s, self.Qs, self.rs = np.empty(n), np.empty((n, n)), np.empty(n)
        self.z, self.w = np.empty(n), np.empty(n)

    @classmethod
    def without(cls, m: int, no_slip: bytes) -> "PyramidLCP":
        """The layout whose edged contacts are those not in the mask ``no_slip`` (bytes of a
        bool array of m entries; the key of a :class:`Layouts` cache)."""
        return cls(m, np.flatnonzero(~np.frombuffer(no_slip, dtype=bool)))

    def build(self, W: np.ndarray, u: np.ndarray, b: np.ndarray, mu: np.ndarray, G: np.ndarray = NO_ROWS,
              C: np.ndarray = NO_COMPLIANCE) -> np.ndarray:
        """Fill ``Q``, ``r`` for the Delassus matrix ``W`` (3m x 3m), free contact velocity ``u``
        (3m), normal constants ``b`` (m), friction ``mu`` (m, finite where edged), equality rows
        ``G`` and normal compliance ``C`` (m, or empty), and the equilibrated ``s``, ``Qs``,
        ``rs``. Returns the upper Cholesky factor of W_GG (numpy's LinAlgError if it is not
        positive definite) for :meth:`impulses`."""
        U = pyramid_lcp(W, u, self.R, G, self.sel, self.sign, b, C, mu, self.edged, self.Q, self.r)
        equilibrate(self.Q, self.r, self.s, self.Qs, self.rs)
        return U

    def impulses(self, zs: np.ndarray, W: np.ndarray, u: np.ndarray, G: np.ndarray = NO_ROWS,
                 U: np.ndarray = NO_FACTOR) -> np.ndarray:
        """Impulses (m, 3) [normal, s, t] of the solution ``zs`` of the equilibrated LCP of the
        last :meth:`build` (the eliminated rows G from their equalities)."""
        out = np.empty((self.m, 3))
        pyramid_impulses(zs, self.s, self.m, self.edged, W, u, self.R, G, U, out)
        return out


class Layouts(dict):
    """Per-layout cache (key: the arguments of ``build``, e.g. (m, bytes of a contact mask))
    bounded to ``limit`` entries."""

    def __init__(self, build, limit: int = 64):
        super().__init__()
        self._build, self._limit = build, limit

    def __missing__(self, key):
        if len(self) >= self._limit:
            self.clear()
        value = self[key] = self._build(*key)
        return value
