"""A collection of free rigid bodies: block-diagonal inertia, sparse point Jacobians.

Configuration and velocity follow pinocchio's free-flyer convention (docs/conventions.md): per body
q = [position (3), quaternion x y z w (4)], v = [linear velocity, angular velocity], both in
the body frame, with the body frame at the centre of mass. Then the inertia block
diag(m I3, I_body) is constant, M^-1 is block diagonal, and every point Jacobian row touches
one body's six columns: a stack of n spheres yields O(n) non-zeros everywhere (Sec. 6.5).
Integration on the quaternion manifold is pinocchio's (a model of n free-flyer joints).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import scipy.sparse as sp

from .. import validation
from ..errors import InvalidInputError
from .geometry import cross
from .mass import MassMatrix

WORLD = -1


class RigidBodies:
    """n free rigid bodies under uniform gravity (immutable; state is passed in)."""

    def __init__(self, masses, inertias, gravity=(0.0, 0.0, -9.81)):
        masses = validation.vector(np.atleast_1d(masses), None, "masses")
        k = masses.shape[0]
        inertias = np.asarray(inertias, dtype=float)
        if inertias.shape == (k, 3):
            inertias = np.stack([np.diag(d) for d in inertias])
        if inertias.shape != (k, 3, 3) or not np.isfinite(inertias).all():
            raise InvalidInputError(f"inertias must be (n, 3) principal moments or (n, 3, 3), "
                                    f"got {inertias.shape}")
        if (masses <= 0).any() or (np.linalg.eigvalsh(inertias) <= 0).any():
            raise InvalidInputError("masses and inertias must be positive definite")
        self.n = k
        self.masses, self.inertias = masses, inertias
        self.gravity = validation.vector(gravity, 3, "gravity")
        blocks = [sp.block_diag([m * np.eye(3), I]) for m, I in zip(masses, inertias)]
        self.mass = MassMatrix(sp.block_diag(blocks, format="csc"))
        self.mass.inverse()          # cache the block-diagonal inverse once
        self._model = pin.Model()
        for i in range(k):
            self._model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), f"body{i}")

    @property
    def nq(self) -> int:
        return 7 * self.n

    @property
    def nv(self) -> int:
        return 6 * self.n

    # ------------------------------------------------------------------ state helpers
    def state(self, positions, quaternions=None) -> np.ndarray:
        """q from (n, 3) positions and (n, 4) x y z w quaternions (identity by default)."""
        p = np.asarray(positions, dtype=float).reshape(self.n, 3)
        quat = np.tile([0.0, 0.0, 0.0, 1.0], (self.n, 1)) if quaternions is None else \
            np.asarray(quaternions, dtype=float).reshape(self.n, 4)
        return np.hstack([p, quat]).ravel()

    def positions(self, q) -> np.ndarray:
        return np.asarray(q).reshape(self.n, 7)[:, :3]

    def rotations(self, q) -> np.ndarray:
        """(n, 3, 3) body-to-world rotations of the unit quaternions in q (pinocchio's)."""
        quaternions = np.asarray(q, dtype=float).reshape(self.n, 7)[:, 3:]
        return np.array([pin.Quaternion(x).toRotationMatrix() for x in quaternions])

    def integrate(self, q, v, dt: float) -> np.ndarray:
        """q (+) v dt (eq. 36), pinocchio's integrate on SE(3)^n."""
        return pin.integrate(self._model, np.asarray(q, dtype=float), np.asarray(v) * float(dt))

    # ------------------------------------------------------------------ dynamics
    def forces(self, q, v, body_forces=None) -> np.ndarray:
        """f = gravity - Newton-Euler velocity terms (+ world-frame forces), body frame.

        Per body: m R^T g - omega x (m v) and -omega x (I omega) (the gyroscopic torque);
        ``body_forces`` is an optional (n, 6) array of world-frame [force, torque about COM].
        """
        v = np.asarray(v, dtype=float).reshape(self.n, 6)
        R = self.rotations(q)
        lin, ang = v[:, :3], v[:, 3:]
        Iw = np.einsum("kij,kj->ki", self.inertias, ang)
        f_lin = self.masses[:, None] * (np.einsum("kji,j->ki", R, self.gravity)
                                        - cross(ang, lin))
        f_ang = -cross(ang, Iw)
        if body_forces is not None:
            w = np.asarray(body_forces, dtype=float).reshape(self.n, 6)
            f_lin += np.einsum("kji,kj->ki", R, w[:, :3])
            f_ang += np.einsum("kji,kj->ki", R, w[:, 3:])
        return np.hstack([f_lin, f_ang]).ravel()

    # ------------------------------------------------------------------ kinematics
    def world_points(self, q, bodies, body_points) -> np.ndarray:
        """World positions of material points ``body_points`` (k, 3) of ``bodies`` (k,)."""
        bodies = np.asarray(bodies)
        R = self.rotations(q)[bodies]
        return self.positions(q)[bodies] + np.einsum("kij,kj->ki", R, body_points)

    def relative_rows(self, q, body_a, point_a, body_b, point_b, directions,
                      rotations=None):
        """Rows d^T (J_B(point_b) - J_A(point_a)): velocity of B relative to A along d.

        ``body_*`` are body indices or :data:`WORLD`; ``point_*`` body-frame points (k, 3);
        ``directions`` world unit vectors (k, 3), or (j, k, 3) for j direction sets (a contact
        frame's n, r, s) sharing one sparsity pattern, returned as a tuple of j matrices.
        This is G for a contact (docs/conventions.md). Each row holds the six columns of each
        non-world body, in column order, so the CSR arrays are written directly
        (``rotations``: the bodies' rotation matrices at q, if already at hand).
        """
        dirs = np.asarray(directions, dtype=float)
        sets = dirs.reshape(-1, *dirs.shape[-2:]) if dirs.ndim == 3 else dirs.reshape(1, -1, 3)
        k = sets.shape[1]
        R = self.rotations(q) if rotations is None else rotations
        a = np.broadcast_to(body_a, (k,))
        b = np.broadcast_to(body_b, (k,))
        first = np.where(a < b, a, b)            # WORLD = -1 sorts first and is dropped
        second = np.where(a < b, b, a)
        blocks = np.stack([first, second], axis=1)                    # (k, 2) body per block
        sign = np.where(blocks == b[:, None], 1.0, -1.0)
        point = np.where((blocks == b[:, None])[..., None],
                         np.broadcast_to(point_b, (k, 3))[:, None, :],
                         np.broadcast_to(point_a, (k, 3))[:, None, :])
        real = blocks != WORLD
        Rk = R[np.where(real, blocks, 0)]                              # (k, 2, 3, 3)
        indptr = np.r_[0, np.cumsum(6 * real.sum(axis=1))]
        indices = ((6 * blocks)[..., None] + np.arange(6))[real].ravel()
        out = []
        for d in sets:
            d_body = np.einsum("kbji,kj->kbi", Rk, d)                  # R^T d per block
            data = sign[..., None] * np.concatenate([d_body, cross(point, d_body)], axis=2)
            out.append(sp.csr_matrix((data[real].ravel(), indices, indptr),
                                     shape=(k, self.nv)))
        return tuple(out) if dirs.ndim == 3 else out[0]

    def point_drift(self, q, v, bodies, body_points) -> np.ndarray:
        """World acceleration of material points at zero vdot: R (w x v + w x (w x b)).

        The velocity-product term of a point's Jacobian (Gdot v of eq. 29, up to a projection).
        """
        bodies = np.asarray(bodies)
        out = np.zeros((bodies.shape[0], 3))
        keep = bodies != WORLD
        v = np.asarray(v, dtype=float).reshape(self.n, 6)[bodies[keep]]
        lin, w = v[:, :3], v[:, 3:]
        b = np.asarray(body_points, dtype=float).reshape(-1, 3)[keep]
        acc = cross(w, lin) + cross(w, cross(w, b))
        out[keep] = np.einsum("kij,kj->ki", self.rotations(q)[bodies[keep]], acc)
        return out

    def point_velocity(self, q, v, bodies, body_points) -> np.ndarray:
        """World velocity R (v + w x b) of material points (zero for WORLD)."""
        bodies = np.asarray(bodies)
        out = np.zeros((bodies.shape[0], 3))
        keep = bodies != WORLD
        vv = np.asarray(v, dtype=float).reshape(self.n, 6)[bodies[keep]]
        b = np.asarray(body_points, dtype=float).reshape(-1, 3)[keep]
        loc = vv[:, :3] + cross(vv[:, 3:], b)
        out[keep] = np.einsum("kij,kj->ki", self.rotations(q)[bodies[keep]], loc)
        return out
