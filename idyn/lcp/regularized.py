"""Lemke's method with the regularisation fallback the paper's implementation relies on.

When Lemke's method fails on ``(q, M)`` (secondary ray from round-off on a degenerate or nearly
singular problem, pivot limit, or an answer that fails the residual check), it is re-run on
``(q, M + eps I)`` for ``eps`` in :data:`REGULARIZATION_SCHEDULE`, smallest first.  A candidate
is accepted only if it passes the residual check (:func:`idyn.lcp.lcp_residuals`) *for the
regularised problem it solved*; the result then has status REGULARIZED (not SOLVED: the
answer need not solve ``(q, M)``), ``regularization = eps``, ``w = (M + eps I) z + q`` and
``original_residual``, the answer's worst residual on ``(q, M)``, so the caller knows it got
the solution of a perturbed problem (physically: a small compliance added to every contact)
and how far it is from solving the original.

The pivot limit (``max_pivots``, default :func:`idyn.lcp.inputs.default_max_pivots`) bounds the
whole call: every attempt draws on what the earlier ones left, so the fallback schedule costs at
most one limit's pivots, not one per attempt; when it runs out the call stops with MAX_PIVOTS
unless an attempt passed.
"""
from __future__ import annotations

import numpy as np

from .inputs import check_lcp, check_options, default_max_pivots
from .lemke import checked_lemke, warm_checked
from .residuals import lcp_residuals
from .result import LCPResult, LCPStatus

#: The regularisation values, tried in this order after the unregularised attempt.
REGULARIZATION_SCHEDULE = (1e-20, 1e-16, 1e-12, 1e-8, 1e-4, 1.0)


def lemke_regularized(M, q, *, schedule=REGULARIZATION_SCHEDULE, **opts) -> LCPResult:
    """Solve the LCP ``(q, M)`` by :func:`idyn.lcp.lemke`, regularising on failure.

    ``opts`` are passed to :func:`idyn.lcp.lemke`.  ``pivots`` in the result counts every
    attempt.  If no candidate passes, the unregularised attempt is returned with its status.
    """
    check_options(opts.get("tol", 0.0), opts.get("max_pivots"))
    M, q = check_lcp(M, q)
    return regularized_checked(M, q, schedule=schedule, **opts)


def regularized_checked(M: np.ndarray, q: np.ndarray, *, schedule=REGULARIZATION_SCHEDULE, stop=None,
                        **opts) -> LCPResult:
    """:func:`lemke_regularized` for ``(M, q)`` a caller built itself (finite float arrays, ``M``
    square, ``q`` of its size): no second input check.  ``stop()`` (optional, a controller's
    time budget) is asked before each regularised attempt; True returns the unregularised one."""
    limit = opts.pop("max_pivots", None)
    limit = default_max_pivots(q.shape[0]) if limit is None else int(limit)
    first = checked_lemke(M, q, max_pivots=limit, **opts)
    if first.solved:
        return first
    pivots = first.pivots
    eye = np.eye(q.shape[0])
    for eps in schedule:
        if pivots >= limit:
            return LCPResult(first.z, first.w, LCPStatus.MAX_PIVOTS, pivots, 0.0, first.basis)
        if stop is not None and stop():
            break
        res = checked_lemke(M + eps * eye, q, max_pivots=limit - pivots, **opts)
        pivots += res.pivots
        if res.solved:
            return LCPResult(res.z, res.w, LCPStatus.REGULARIZED, pivots, float(eps), res.basis,
                             lcp_residuals(M, q, res.z).worst, res.basic)
    return LCPResult(first.z, first.w, first.status, pivots, 0.0, first.basis, basic=first.basic)


def warm_up() -> None:
    """Load (or compile) the kernels of the LCP paths only some data reach, on 2 x 2 LCPs: the
    check of a warm start's basis (:func:`idyn.lcp.lemke.warm_checked`, taken once a loop has a
    previous basis of enough variables) and the residual check of an accepted regularised
    answer on the original problem, called from Python (:func:`idyn.lcp.lcp_residuals`).  A
    controller whose warm-up states never reach them would otherwise meet them first inside
    its loop."""
    warm_checked(np.eye(2), np.array([-1.0, 1.0]), np.array([0], dtype=np.intp))
    regularized_checked(np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([-1.0, 1.0]))
