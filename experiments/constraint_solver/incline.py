"""Box on a 15-degree incline with four Hertzian feet, paper Sec. 6.4, Fig. 9.

Box 1 kg, 0.2 x 0.1 x 0.05 m, with rigid spherical feet of radius 0.01 m centred at its
bottom corners, on an elastic half-space (E* = 1e11 N/m^2, so E* sqrt(r) = 1e10, eq. 122),
B_n = 1, K_r = K_s = 0, B_r = B_s = 1e6 / h; h = 0.01, 1 s, 3D contact with a true friction
cone (SOCP). The box starts at rest at the Hertz equilibrium depth (the paper: "initially
motionless"; starting at zero depth would make the first step an impact). Expected:
no friction at mu = 0, stiction at mu = 0.375 > tan 15 deg = 0.268, sliding distance
decreasing in mu, friction opposing motion.
"""
from __future__ import annotations

import numpy as np

from idyn.constraint_solver import ConstraintProblem
from idyn.constraint_solver.bodies import WORLD, RigidBodies
from idyn.constraint_solver.geometry import sphere_plane
from idyn.constraint_solver.models import hertz, hertz_force
from idyn.constraint_solver.point_contacts import contact_rows

from .common import Stopwatch, curves, make_solver, solver_stats

MASS, DIMS, FOOT_R, E_STAR, B_N, H, DURATION = 1.0, (0.2, 0.1, 0.05), 0.01, 1e11, 1.0, 0.01, 1.0
ANGLE = np.deg2rad(15.0)
MUS = (0.0, 0.125, 0.25, 0.375)
NORMAL = np.array([np.sin(ANGLE), 0.0, np.cos(ANGLE)])
DOWNHILL = np.array([np.cos(ANGLE), 0.0, -np.sin(ANGLE)])
FEET = np.array([[sx * DIMS[0] / 2, sy * DIMS[1] / 2, -DIMS[2] / 2]
                 for sx in (-1, 1) for sy in (-1, 1)])


def make_box() -> RigidBodies:
    a, b, c = DIMS
    return RigidBodies([MASS], [[MASS * (b * b + c * c) / 12, MASS * (a * a + c * c) / 12,
                                 MASS * (a * a + b * b) / 12]])


def initial_state(box: RigidBodies):
    """At rest, bottom parallel to the incline, feet at the Hertz equilibrium depth."""
    per_foot = MASS * 9.81 * np.cos(ANGLE) / 4
    depth = (per_foot / (E_STAR * np.sqrt(FOOT_R))) ** (2 / 3)
    half = ANGLE / 2
    quat = [0.0, np.sin(half), 0.0, np.cos(half)]         # rotation about y by 15 deg
    center = (DIMS[2] / 2 + FOOT_R - depth) * NORMAL
    return box.state([center], [quat]), np.zeros(6)


def problem(box: RigidBodies, q, v, mu: float, h: float):
    centers = box.world_points(q, np.zeros(4, int), FEET)
    geom = sphere_plane(centers, np.full(4, FOOT_R), np.zeros(3), NORMAL)
    act = np.flatnonzero(geom.depth >= 0.0)
    f = box.forces(q, v)
    if not act.size:
        return ConstraintProblem(box.mass, f, v, h), act
    g = type(geom)(geom.depth[act], geom.normal[act], geom.point_a[act], geom.point_b[act])
    drift = box.point_drift(q, v, np.zeros(act.size, int), FEET[act]) @ NORMAL
    law = hertz(g.depth, E_STAR, FOOT_R, B_N)
    rows = contact_rows(box, q, g, WORLD, 0, law, drift, mu, h)
    return ConstraintProblem(box.mass, f, v, h, contacts=rows), act


def simulate(mu: float, options: dict, duration: float = DURATION) -> dict:
    box, solver = make_box(), make_solver(options)
    q, v = initial_state(box)
    x0 = box.positions(q)[0].copy()
    dist, normal_force, friction_power, friction_mag, infos = [0.0], [], [], [], []
    steps = int(round(duration / H))
    with Stopwatch() as sw:
        for _ in range(steps):
            prob, act = problem(box, q, v, mu, H)
            q, sol = solver.step(prob, q, box.integrate)
            infos.append(sol.info)
            if prob.contacts is not None:
                c = prob.contacts
                f_fric = c.tangent_r.G.T @ sol.lambda_r + c.tangent_s.G.T @ sol.lambda_s
                friction_power.append(float(f_fric @ sol.v1))      # <= 0: opposes motion
                friction_mag.append(float(np.max(np.hypot(sol.lambda_r, sol.lambda_s))))
                normal_force.append(float(np.sum(sol.lambda_n)))
            v = sol.v1
            dist.append(float((box.positions(q)[0] - x0) @ DOWNHILL))
    return {"mu": mu, "seconds": sw.seconds, "distance": dist, "final_distance": dist[-1],
            "max_friction": max(friction_mag, default=0.0),
            "max_friction_power": max(friction_power, default=0.0),
            "mean_normal_per_foot": float(np.mean(normal_force) / 4) if normal_force else 0.0,
            "hertz_depth_at_mean_load": float(
                (np.mean(normal_force) / 4 / (E_STAR * np.sqrt(FOOT_R))) ** (2 / 3)),
            "solver": solver_stats(infos)}


def run(short: bool = False, duration: float | None = None, **options) -> dict:
    """Every mu of Fig. 9 for ``duration`` s (default 1 s, 0.5 s when short)."""
    duration = duration if duration is not None else (0.5 if short else DURATION)
    runs = [simulate(mu, options, duration) for mu in MUS]
    d = [r["final_distance"] for r in runs]
    return {"example": "incline", "h": H, "angle_deg": 15.0, "duration": duration, "runs": runs,
            "no_friction_at_mu0": runs[0]["max_friction"] == 0.0,
            "stiction_at_mu_0375": abs(d[-1]) < 1e-3,
            "distance_decreasing_in_mu": bool(np.all(np.diff(d) < 0)),
            "friction_opposes_motion": all(r["max_friction_power"] <= 1e-9 for r in runs),
            "hertz_force_check_N": float(hertz_force(1e-8, E_STAR, FOOT_R))}


def table(results: dict) -> str:
    lines = ["mu      distance [m]  max friction [N]  normal/foot [N]  time    status"]
    for r in results["runs"]:
        lines.append(f"{r['mu']:<6.3f}  {r['final_distance']:+.5f}      {r['max_friction']:8.4f}"
                     f"          {r['mean_normal_per_foot']:.3f}          {r['seconds']:.2f}s  "
                     f"{r['solver']['status_counts']}")
    for key in ("no_friction_at_mu0", "stiction_at_mu_0375", "distance_decreasing_in_mu",
                "friction_opposes_motion"):
        lines.append(f"{key}: {results[key]}")
    return "\n".join(lines)


def plot(results: dict, out_dir: str) -> list[str]:
    series = [(np.arange(len(r["distance"])) * results["h"], r["distance"], f"mu = {r['mu']}")
              for r in results["runs"]]
    return [curves(f"{out_dir}/incline.png", series, xlabel="t [s]", ylabel="distance down the slope [m]",
                   title="Box on a 15 deg incline (Hertzian feet, friction cone)")]
