"""Rigid multibody model over pinocchio: the quantities of the paper's Sec. 2.2.

:class:`RobotModel` wraps one immutable ``pinocchio.Model`` and one reusable ``pinocchio.Data``
(the pinocchio habit: the model never changes after construction, the workspace is reused, so a
control step allocates little). Everything pinocchio computes is called, never re-derived:

* ``mass_matrix(q)``            M(q), the generalized inertia (CRBA),
* ``bias_forces(q, v)``         h(q, v) = C(q, v) v + g(q) (RNEA with zero acceleration),
* ``frame_jacobian(q, f, p)``   the 6 x nv world-aligned Jacobian [linear; angular] of a point,
* ``point_drift(q, v, f, p)``   Jdot(q, v) v of that point (classical acceleration at vdot = 0),
* ``actuation_matrix()``        P, the na x nv selection of actuated velocities (paper eq. 17).

Conventions (SPEC section 2) are pinocchio's: a free-flyer q is [position, quaternion x y z w,
joints]; its v is [linear, angular velocity in the base frame, joint rates]. The paper's
generalized velocity is pinocchio's v. Contacted free bodies (the grasped box of paper eqs. 1-3)
are appended with :meth:`RobotModel.append_free_body`, which returns a new model.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from . import validation
from .errors import InvalidInputError, ModelLoadError, UnknownFrameError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


class RobotModel:
    """An immutable multibody model with one reusable pinocchio workspace.

    Parameters
    ----------
    model:
        The pinocchio model. It is copied, so later changes to the argument do not leak in.
    unactuated_joints:
        Names of joints whose velocities are not actuated (the floating base, appended free
        bodies). Every other joint is actuated by one motor per velocity coordinate.
    """

    def __init__(self, model: pin.Model, unactuated_joints: tuple[str, ...] = (),
                 source: str | None = None):
        self._model = pin.Model(model)
        self._data = self._model.createData()
        self.source = source
        names = list(self._model.names)
        for j in unactuated_joints:
            if j not in names:
                raise UnknownFrameError(f"no joint named {j!r} in model {self._model.name!r}")
        self.unactuated_joints = tuple(unactuated_joints)
        passive = np.zeros(self._model.nv, dtype=bool)
        for j in unactuated_joints:
            jm = self._model.joints[self._model.getJointId(j)]
            passive[jm.idx_v: jm.idx_v + jm.nv] = True
        #: velocity indices of the actuated coordinates, in pinocchio order
        self.actuated_v = np.flatnonzero(~passive)
        #: velocity indices of the unactuated coordinates (floating base, free bodies)
        self.unactuated_v = np.flatnonzero(passive)
        #: configuration indices of the actuated coordinates (actuated joints are 1-DOF)
        self.actuated_q = np.array([self._q_index(i) for i in self.actuated_v], dtype=int)
        self._P = np.zeros((self.actuated_v.size, self._model.nv))
        self._P[np.arange(self.actuated_v.size), self.actuated_v] = 1.0
        self._P.setflags(write=False)

    def _q_index(self, iv: int) -> int:
        for j in self._model.joints[1:]:
            if j.idx_v <= iv < j.idx_v + j.nv:
                if j.nq != j.nv:
                    raise InvalidInputError(
                        f"actuated joint {j.shortname()} has nq != nv; only 1-DOF actuated joints are supported")
                return j.idx_q + (iv - j.idx_v)
        raise InvalidInputError(f"velocity index {iv} belongs to no joint")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(cls, path, floating_base: bool) -> "RobotModel":
        """Load a URDF; ``floating_base`` adds a free-flyer root joint named ``root_joint``."""
        path = Path(path)
        if not path.is_file():
            raise ModelLoadError(f"URDF file not found: {path}")
        try:
            if floating_base:
                model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            else:
                model = pin.buildModelFromUrdf(str(path))
        except (RuntimeError, ValueError) as exc:
            raise ModelLoadError(f"cannot parse URDF {path}: {exc}") from exc
        return cls(model, ("root_joint",) if floating_base else (), source=str(path))

    def append_free_body(self, name: str, mass: float, inertia, com=(0.0, 0.0, 0.0)) -> "RobotModel":
        """Return a new model with an unactuated 6-DOF rigid body appended (paper eqs. 1-3).

        The body's free-flyer joint is named ``name + "_joint"`` and its frame ``name``; its
        coordinates come after the robot's, so M becomes block diagonal as in eq. 3.
        ``inertia`` is the 3 x 3 rotational inertia about the centre of mass.
        """
        if not (np.isfinite(mass) and mass > 0):
            raise InvalidInputError(f"mass must be positive and finite, got {mass}")
        inertia = validation.matrix(inertia, (3, 3), "inertia")
        com = validation.vector(com, 3, "com")
        if name in [f.name for f in self._model.frames]:
            raise InvalidInputError(f"a frame named {name!r} already exists")
        model = pin.Model(self._model)
        jid = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), name + "_joint")
        model.appendBodyToJoint(jid, pin.Inertia(float(mass), com, inertia), pin.SE3.Identity())
        jframe = model.addJointFrame(jid, 0)
        model.addBodyFrame(name, jid, pin.SE3.Identity(), jframe)
        return RobotModel(model, self.unactuated_joints + (name + "_joint",), source=self.source)

    # ------------------------------------------------------------------ sizes and facts
    @property
    def pinocchio_model(self) -> pin.Model:
        """The wrapped pinocchio model (treat as read-only)."""
        return self._model

    @property
    def nq(self) -> int:
        return self._model.nq

    @property
    def nv(self) -> int:
        return self._model.nv

    @property
    def na(self) -> int:
        """Number of actuated velocity coordinates (rows of P)."""
        return int(self.actuated_v.size)

    @property
    def total_mass(self) -> float:
        return float(sum(inertia.mass for inertia in self._model.inertias))

    @property
    def gravity(self) -> np.ndarray:
        return self._model.gravity.linear.copy()

    @property
    def floating_base(self) -> bool:
        return "root_joint" in self.unactuated_joints

    @property
    def actuated_joint_names(self) -> list[str]:
        """Names of actuated joints, in the order of the actuated coordinates."""
        out = []
        for j in range(1, self._model.njoints):
            if self._model.names[j] not in self.unactuated_joints:
                out.append(self._model.names[j])
        return out

    @property
    def effort_limits(self) -> np.ndarray:
        """Torque limits of the actuated coordinates (from the URDF ``effort`` attribute)."""
        return np.asarray(self._model.effortLimit)[self.actuated_v].copy()

    def neutral(self) -> np.ndarray:
        return pin.neutral(self._model)

    def has_frame(self, name: str) -> bool:
        return self._model.existFrame(name)

    def frame_id(self, name: str) -> int:
        """Pinocchio index of a frame (URDF link or joint name); UnknownFrameError if absent."""
        if not self._model.existFrame(name):
            raise UnknownFrameError(f"no frame named {name!r} in model {self._model.name!r}")
        return self._model.getFrameId(name)

    # ------------------------------------------------------------------ validation
    def check_q(self, q) -> np.ndarray:
        return validation.vector(q, self.nq, "q")

    def check_v(self, v, name: str = "v") -> np.ndarray:
        return validation.vector(v, self.nv, name)

    # ------------------------------------------------------------------ dynamics
    def mass_matrix(self, q) -> np.ndarray:
        """M(q), symmetric positive definite, nv x nv (CRBA)."""
        q = self.check_q(q)
        M = pin.crba(self._model, self._data, q)
        return np.triu(M) + np.triu(M, 1).T

    def bias_forces(self, q, v) -> np.ndarray:
        """h(q, v) = C(q, v) v + g(q): the generalized force for zero acceleration."""
        return pin.nonLinearEffects(self._model, self._data, self.check_q(q), self.check_v(v)).copy()

    def gravity_forces(self, q) -> np.ndarray:
        """g(q), the generalized gravity force."""
        return pin.computeGeneralizedGravity(self._model, self._data, self.check_q(q)).copy()

    def inverse_dynamics(self, q, v, vdot) -> np.ndarray:
        """M(q) vdot + h(q, v) (RNEA): generalized forces producing ``vdot`` without contact."""
        return pin.rnea(self._model, self._data, self.check_q(q), self.check_v(v),
                        self.check_v(vdot, "vdot")).copy()

    def actuation_matrix(self) -> np.ndarray:
        """P (na x nv): maps generalized velocities to actuated ones; forces are P^T tau."""
        return self._P

    # ------------------------------------------------------------------ kinematics
    def integrate(self, q, v, dt: float) -> np.ndarray:
        """q (+) v dt on the configuration manifold (quaternions stay unit)."""
        return pin.integrate(self._model, self.check_q(q), self.check_v(v) * float(dt))

    def difference(self, q0, q1) -> np.ndarray:
        """The velocity v with q0 (+) v = q1."""
        return pin.difference(self._model, self.check_q(q0), self.check_q(q1))

    def frame_placement(self, q, frame: str) -> pin.SE3:
        """World placement of a frame (a copy)."""
        fid = self.frame_id(frame)
        pin.framesForwardKinematics(self._model, self._data, self.check_q(q))
        return pin.SE3(self._data.oMf[fid])

    def frame_position(self, q, frame: str) -> np.ndarray:
        return self.frame_placement(q, frame).translation

    def frame_jacobian(self, q, frame: str, point=None) -> np.ndarray:
        """6 x nv Jacobian [linear; angular] in world-aligned axes.

        Without ``point`` it is the Jacobian of the frame origin; with ``point`` (world
        coordinates) it is the Jacobian of the material point of the frame's body that is
        currently at ``point``: J_lin(p) = J_lin(o) - [p - o]x J_ang.
        """
        q = self.check_q(q)
        fid = self.frame_id(frame)
        J = pin.computeFrameJacobian(self._model, self._data, q, fid, LWA)
        if point is not None:
            r = validation.vector(point, 3, "point") - self._data.oMf[fid].translation
            J[:3] -= _skew(r) @ J[3:]
        return J

    def point_jacobians(self, q, frames, points) -> np.ndarray:
        """Linear Jacobians of many material points, shape (k, 3, nv), world axes.

        One pass of joint Jacobians and frame placements serves all points (the per-contact
        cost is one frame lookup and a 3 x 3 shift), which is what a control step with many
        contacts needs.
        """
        q = self.check_q(q)
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(frames) != points.shape[0]:
            raise InvalidInputError(f"{len(frames)} frames but {points.shape[0]} points")
        fids = [self.frame_id(f) for f in frames]
        pin.computeJointJacobians(self._model, self._data, q)
        pin.updateFramePlacements(self._model, self._data)
        out = np.empty((len(fids), 3, self.nv))
        cache: dict[int, np.ndarray] = {}
        for k, (fid, p) in enumerate(zip(fids, points)):
            J = cache.get(fid)
            if J is None:
                J = cache[fid] = pin.getFrameJacobian(self._model, self._data, fid, LWA)
            r = p - self._data.oMf[fid].translation
            out[k] = J[:3] - _skew(r) @ J[3:]
        return out

    def point_drift(self, q, v, frame: str, point=None) -> np.ndarray:
        """Jdot(q, v) v of a point of ``frame``'s body (3-vector, world axes).

        This is the classical acceleration of the point when vdot = 0, which the
        acceleration-level contact constraints need (paper eqs. 33-34):
        a_p = a_o + alpha x r + omega x (omega x r), with r = p - o.
        """
        q, v = self.check_q(q), self.check_v(v)
        fid = self.frame_id(frame)
        pin.forwardKinematics(self._model, self._data, q, v, np.zeros(self.nv))
        pin.updateFramePlacement(self._model, self._data, fid)
        a = pin.getFrameClassicalAcceleration(self._model, self._data, fid, LWA)
        drift = a.linear.copy()
        if point is not None:
            r = validation.vector(point, 3, "point") - self._data.oMf[fid].translation
            omega = pin.getFrameVelocity(self._model, self._data, fid, LWA).angular
            drift += np.cross(a.angular, r) + np.cross(omega, np.cross(omega, r))
        return drift

    def point_velocity(self, q, v, frame: str, point=None) -> np.ndarray:
        """World velocity of a point of ``frame``'s body (J(point) v, linear part)."""
        return self.frame_jacobian(q, frame, point)[:3] @ self.check_v(v)

    def center_of_mass(self, q) -> np.ndarray:
        return pin.centerOfMass(self._model, self._data, self.check_q(q)).copy()

    def __repr__(self) -> str:
        return (f"RobotModel({self._model.name!r}, nq={self.nq}, nv={self.nv}, na={self.na}, "
                f"mass={self.total_mass:.4g} kg)")
