"""idyn.sim's ``qp`` model warm start: the last solve's active set, accepted only through the
KKT conditions, gives quadprog's minimiser; a wrong active set is refused.

A box on a plane rests on four corners, one more than it needs: W is singular and the split of
its load among the corners is decided only by the QP's ridge (1e-9 relative, idyn.qp), which
quadprog and the KKT solve each resolve to about 1e-7 relative (measured 0.7-3.4e-7); the step
itself, v+ and the total load, agree to 10 x the guess's acceptance tolerance (GUESS_TOL, 1e-9
relative; since the sim's default backend is DAQP, whose answer's tight rows seed the guess,
measured: v+ to 2.0e-11 m/s on a velocity scale of g dt = 9.81e-3 m/s, the total normal impulse
to 1.4e-9 relative)."""
import numpy as np
import pytest

from idyn.qp import REGULARIZATION_SCHEDULE, solve_built
from idyn.sim import make
from idyn.sim._step_kernel import qp_active_guess, tight_rows

from test_sim import box_on_plane


@pytest.mark.parametrize("angle,mu", [(0.0, 0.5), (0.5, 0.45), (0.3, 0.6)])
def test_warm_steps_equal_cold_solves(angle, mu):
    """Resting, sliding (tan 0.5 > 0.45) and sticking on an incline: every step of the
    warm-started model equals that of a fresh model solving the same problem from scratch (v+
    and the total normal impulse to 1e-8, the corners' split to 1e-6, module docstring), and the
    warm start carries most steps."""
    sim = box_on_plane("qp", angle, mu, separation_weight=0.0)
    tau, contact_steps, warm_steps = np.zeros(0), 0, 0
    for _ in range(60):
        problem = sim.problem(tau)
        if problem.m:
            warm = sim.contact_model.solve(problem)
            cold = make("qp", separation_weight=0.0).solve(problem)
            assert cold.iterations > 0 and warm.status == cold.status == "solved"
            contact_steps, warm_steps = contact_steps + 1, warm_steps + (warm.iterations == 0)
            v_warm, v_cold = problem.velocity(warm.impulses), problem.velocity(cold.impulses)
            np.testing.assert_allclose(v_warm, v_cold, rtol=0, atol=1e-8 * max(np.abs(v_cold).max(), 9.81e-3))
            assert warm.impulses[:, 0].sum() == pytest.approx(cold.impulses[:, 0].sum(), rel=1e-8)
            np.testing.assert_allclose(warm.impulses, cold.impulses, rtol=0, atol=1e-6 * np.abs(cold.impulses).max())
        sim.step(tau)
    assert contact_steps >= 30 and warm_steps >= contact_steps // 2


def qp_of(sim):
    """The qp model's QP (H, c, A_in, b_in) of the next step, as its layout holds it after a
    cold solve, and solve_built's answer with the ridge the warm start uses."""
    model = make("qp", separation_weight=0.0)
    model.solve(sim.problem(np.zeros(0)))
    lay = next(iter(model._layouts.values()))
    H, c, A, b = lay.H.copy(), lay.c.copy(), lay.A_in.copy(), lay.b_in.copy()
    eps = REGULARIZATION_SCHEDULE[0] * max(np.abs(np.diag(H)).max(), 1.0)
    res = solve_built(H, c, np.zeros((0, c.size)), np.zeros(0), A, b)
    assert res.solved and res.regularization == eps
    return H, c, A, b, eps, res.x


def test_guess_accepts_the_active_set_and_refuses_others():
    """The tight rows of quadprog's answer give it back; no active rows (the unconstrained
    minimiser of the singular-but-ridged Hessian, which pulls the box into the plane) and a set
    with a bound row that should be inactive are refused."""
    H, c, A, b, eps, x_ref = qp_of(box_on_plane("qp", 0.5, 0.45))
    rows = np.empty(A.shape[0], dtype=np.intp)
    active = rows[:tight_rows(A, b, x_ref, 1e-9, rows)]
    x = np.empty(c.size)
    assert qp_active_guess(H, c, A, b, eps, active, 1e-9, x)
    np.testing.assert_allclose(x, x_ref, rtol=0, atol=1e-6 * np.abs(x_ref).max())
    ridged = H + eps * np.eye(c.size)
    best = 0.5 * x_ref @ ridged @ x_ref + c @ x_ref
    assert 0.5 * x @ ridged @ x + c @ x <= best + 1e-12 * abs(best)
    assert not qp_active_guess(H, c, A, b, eps, np.zeros(0, dtype=np.intp), 1e-9, x)
    m = c.size // 5
    loaded = int(np.argmax(x_ref[:m]))                  # f_N > 0: its bound row is not active
    assert not qp_active_guess(H, c, A, b, eps, np.append(active, m + loaded), 1e-9, x)
