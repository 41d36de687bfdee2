"""Rigid multibody model over pinocchio: the quantities of the paper's Sec. 2.2.

:class:`RobotModel` wraps one immutable ``pinocchio.Model`` and one reusable ``pinocchio.Data``
(the pinocchio habit: the model never changes after construction, the workspace is reused, so a
control step allocates little). Everything pinocchio computes is called, never re-derived:

* ``mass_matrix(q)``            M(q), the generalized inertia (CRBA),
* ``bias_forces(q, v)``         h(q, v) = C(q, v) v + g(q) (RNEA with zero acceleration),
* ``frame_jacobian(q, f, p)``   the 6 x nv world-aligned Jacobian [linear; angular] of a point,
* ``point_drift(q, v, f, p)``   Jdot(q, v) v of that point (classical acceleration at vdot = 0),
* ``actuation_matrix()``        P, the na x nv selection of actuated velocities (paper eq. 17).

A control or simulation step needs M, h and the Jacobians (and drifts) of many contact points at
one state. :class:`Workspace` (``model.workspace()``) computes them in one pinocchio pass
(CRBA, RNEA at zero acceleration, joint Jacobians and their time variation, frame placements)
and serves any number of points from it with vectorized numpy, no per-point pinocchio call.

Conventions (docs/conventions.md) are pinocchio's: a free-flyer q is [position, quaternion x y z w,
joints]; its v is [linear, angular velocity in the base frame, joint rates]. The paper's
generalized velocity is pinocchio's v. Contacted free bodies (the grasped box of paper eqs. 1-3)
are appended with :meth:`RobotModel.append_free_body`, which returns a new model.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin

from . import validation
from .errors import InvalidInputError, ModelLoadError, QuaternionError, UnknownFrameError
from .jit import cached_jit
from .state import RobotState

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def _crba_fills_lower() -> bool:
    """Whether this pinocchio's CRBA writes the whole M (4.x) or its upper triangle only (<= 3.x).

    Probed once on pinocchio's sample manipulator, whose M has no zero below the diagonal."""
    pm = pin.buildSampleModelManipulator()
    M = pin.crba(pm, pm.createData(), pin.neutral(pm) + 0.3)
    return bool(np.array_equal(M, M.T))


_CRBA_FULL = _crba_fills_lower()


def _returns_fresh_arrays() -> bool:
    """Whether this pinocchio's ``crba``, ``nonLinearEffects`` and ``computeJointJacobians``
    return arrays of their own (4.x) rather than views of the Data they fill: then
    :meth:`Workspace.compute_checked` keeps them without a copy.  Probed once on pinocchio's
    sample manipulator (two calls must not share memory, nor share it with the Data)."""
    pm = pin.buildSampleModelManipulator()
    data = pm.createData()
    q, v = pin.neutral(pm) + 0.3, np.full(pm.nv, 0.2)
    pairs = ((pin.crba(pm, data, q), pin.crba(pm, data, q), data.M),
             (pin.nonLinearEffects(pm, data, q, v), pin.nonLinearEffects(pm, data, q, v), data.nle),
             (pin.computeJointJacobians(pm, data, q), pin.computeJointJacobians(pm, data, q), data.J))
    return not any(np.shares_memory(a, b) or np.shares_memory(a, own) for a, b, own in pairs)


_FRESH = _returns_fresh_arrays()

#: how far from 1 the norm of a free-flyer quaternion in q may be (:meth:`RobotModel.check_quaternions`):
#: a quaternion that testbeds normalise in double precision is within 1e-15; 1e-6 still admits
#: one stored in single precision (1e-7), and a torque error of order 1e-6 relative
QUATERNION_TOL = 1e-6

#: how many sequences of body names :meth:`RobotModel.body_joints` keeps answers for
_JOINT_ARRAYS = 256

_NEXT, _PREV = np.array([1, 2, 0]), np.array([2, 0, 1])


@cached_jit
def _unit_blocks(q, blocks, tol):
    """Whether every block ``q[i:i + k]`` of ``blocks`` (rows ``(i, k)``) has a norm within
    ``tol`` of 1 (one compiled pass: a control step checks its state's base quaternion)."""
    for b in range(blocks.shape[0]):
        i, k = blocks[b, 0], blocks[b, 1]
        s = 0.0
        for j in range(i, i + k):
            s += q[j] * q[j]
        if not abs(math.sqrt(s) - 1.0) <= tol:
            return False
    return True


#: (offset in the joint's q, length) of the unit-norm block of each pinocchio joint whose
#: configuration lives on a manifold: a quaternion (x, y, z, w) or a (cos, sin) pair
_UNIT_BLOCK = {"JointModelFreeFlyer": (3, 4), "JointModelSpherical": (0, 4), "JointModelPlanar": (2, 2),
               "JointModelRUBX": (0, 2), "JointModelRUBY": (0, 2), "JointModelRUBZ": (0, 2),
               "JointModelRevoluteUnboundedUnaligned": (0, 2)}


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of two (k, 3) arrays (np.cross costs 20 us on small arrays)."""
    return a.take(_NEXT, axis=1) * b.take(_PREV, axis=1) - a.take(_PREV, axis=1) * b.take(_NEXT, axis=1)


def as_slice(index: np.ndarray) -> slice | np.ndarray:
    """A contiguous ascending index array as the equivalent slice (indexing with it is a view,
    several times cheaper than fancy indexing on the small arrays of a control step); any other
    index array unchanged."""
    index = np.asarray(index)
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index


_UNBOUNDED = {"JointModelRUBX": pin.JointModelRX, "JointModelRUBY": pin.JointModelRY,
              "JointModelRUBZ": pin.JointModelRZ}


def revolute_chart(model: pin.Model) -> pin.Model:
    """The same mechanism with every continuous joint (nq = 2: cos, sin) as a revolute joint
    whose one coordinate is its angle: same joints, placements, inertias and frames (in the same
    order), so kinematics agree at matching configurations. For code that works on joint angles,
    such as a planner's Newton iterations on leg angles (planners.leg_kinematics)."""
    out = pin.Model()
    out.name, out.gravity = model.name, model.gravity
    data = model.createData()
    pin.forwardKinematics(model, data, pin.neutral(model))   # motion subspaces: the joints' axes
    for j in range(1, model.njoints):
        jm = model.joints[j]
        kind = jm.shortname()
        if kind in _UNBOUNDED:
            jm = _UNBOUNDED[kind]()
        elif kind == "JointModelRevoluteUnboundedUnaligned":
            jm = pin.JointModelRevoluteUnaligned(np.asarray(data.joints[j].S).ravel()[3:])
        jid = out.addJoint(model.parents[j], jm, model.jointPlacements[j], model.names[j])
        out.appendBodyToJoint(jid, model.inertias[j], pin.SE3.Identity())
    for f in list(model.frames)[1:]:
        out.addFrame(pin.Frame(f), False)
    return out


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
        passive_q = np.zeros(self._model.nq, dtype=bool)
        for j in unactuated_joints:
            jm = self._model.joints[self._model.getJointId(j)]
            passive[jm.idx_v: jm.idx_v + jm.nv] = True
            passive_q[jm.idx_q: jm.idx_q + jm.nq] = True
        for jid in range(1, self._model.njoints):
            name, jm = self._model.names[jid], self._model.joints[jid]
            if name not in self.unactuated_joints and jm.nq != jm.nv and jm.nv != 1:
                raise InvalidInputError(
                    f"actuated joint {name!r} ({jm.shortname()}, nq={jm.nq}, nv={jm.nv}) has a curved "
                    f"configuration space of more than one dimension; actuated joints must have nq = nv "
                    f"(revolute, prismatic, ...) or one velocity (continuous); list it in unactuated_joints")
        #: velocity indices of the actuated coordinates, in pinocchio order
        self.actuated_v = np.flatnonzero(~passive)
        #: velocity indices of the unactuated coordinates (floating base, free bodies)
        self.unactuated_v = np.flatnonzero(passive)
        #: configuration indices of the actuated joints' coordinates, in pinocchio order: one per
        #: actuated velocity when every actuated joint has nq = nv (:attr:`flat_actuation`), two
        #: (cos, sin) for a continuous joint
        self.actuated_q = np.flatnonzero(~passive_q)
        #: whether every actuated joint has nq = nv (revolute, prismatic, ...): its position is its
        #: configuration, ``q[actuated_q]`` are the joint positions and ``pin.difference`` on them is
        #: a subtraction. False with a continuous joint (nq = 2, nv = 1), whose position is an angle:
        #: :meth:`joint_positions`, :meth:`with_joint_positions`, :meth:`joint_error`.
        self.flat_actuation = bool(self.actuated_q.size == self.actuated_v.size)
        self._neutral = pin.neutral(self._model)
        self._neutral.setflags(write=False)
        #: index in q of the quaternion (x y z w) of every free-flyer joint (the floating base,
        #: appended free bodies)
        self.quaternion_q = tuple(jm.idx_q + 3 for jm in self._model.joints[1:]
                                  if jm.shortname() == "JointModelFreeFlyer")
        #: (start in q, length, joint name) of every unit-norm block of q: the quaternions above,
        #: spherical joints' and the (cos, sin) of continuous and planar joints
        self.unit_blocks = tuple((jm.idx_q + _UNIT_BLOCK[jm.shortname()][0], _UNIT_BLOCK[jm.shortname()][1],
                                  self._model.names[jm.id]) for jm in self._model.joints[1:]
                                 if jm.shortname() in _UNIT_BLOCK)
        self._unit_blocks = np.array([b[:2] for b in self.unit_blocks], dtype=np.intp).reshape(-1, 2)
        self._P = np.zeros((self.actuated_v.size, self._model.nv))
        self._P[np.arange(self.actuated_v.size), self.actuated_v] = 1.0
        self._P.setflags(write=False)
        #: support[j, i] = 1 when velocity i moves joint j's body (its ancestors' and its own
        #: columns of the world Jacobian); row 0 is the world (all zero)
        self.support = np.zeros((self._model.njoints, self._model.nv))
        for j in range(1, self._model.njoints):
            for k in self._model.supports[j]:
                jm = self._model.joints[k]
                self.support[j, jm.idx_v: jm.idx_v + jm.nv] = 1.0
        self.support.setflags(write=False)
        self._frame_joints: dict[str | None, int] = {None: 0}
        self._joint_arrays: dict[tuple, np.ndarray] = {}   # body_joints' answers
        self._q_shape, self._v_shape = (self._model.nq,), (self._model.nv,)
        self._lower = np.tril_indices(self._model.nv, -1)
        self._workspace = Workspace(self)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(cls, path, floating_base: bool) -> "RobotModel":
        """Load a URDF; ``floating_base`` adds a free-flyer root joint named ``root_joint``.

        Every joint pinocchio builds from a URDF is accepted: revolute (aligned with an axis or
        not), prismatic, fixed (merged into its parent body) and continuous (pinocchio's
        unbounded revolute, nq = 2: (cos, sin), nv = 1; see :meth:`joint_positions`)."""
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
        try:
            return cls(model, ("root_joint",) if floating_base else (), source=str(path))
        except InvalidInputError as exc:
            raise ModelLoadError(f"URDF {path}: {exc}") from exc

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

    def body_joints(self, bodies) -> np.ndarray:
        """Index of the joint that carries each named body (frame name; None is the world, 0), as a
        read-only array made once per sequence of names (a control step asks for the same feet
        every step: one dictionary lookup instead of a list and an array, ~2 us)."""
        key = tuple(bodies)
        joints = self._joint_arrays.get(key)
        if joints is None:
            cache = self._frame_joints
            for b in key:
                if b not in cache:
                    cache[b] = self._model.frames[self.frame_id(b)].parentJoint
            joints = np.array([cache[b] for b in key], dtype=np.intp)
            joints.setflags(write=False)
            if len(self._joint_arrays) >= _JOINT_ARRAYS:    # bounded: callers may ask for any sequence
                self._joint_arrays.clear()
            self._joint_arrays[key] = joints
        return joints

    def check_bodies(self, bodies) -> None:
        """UnknownFrameError for a name in ``bodies`` that is no frame of the model (None: the
        world); a name seen before costs one dictionary lookup (:meth:`body_joints` caches)."""
        cache = self._frame_joints
        for b in bodies:
            if b not in cache:
                self.body_joints((b,))

    def workspace(self) -> "Workspace":
        """A new reusable workspace (its own pinocchio Data) for one-pass step quantities."""
        return Workspace(self)

    def _symmetric(self, M: np.ndarray) -> np.ndarray:
        """pinocchio's M as an array of our own (a copy unless pinocchio returned one) with the
        lower triangle filled where CRBA left it empty."""
        if _CRBA_FULL and _FRESH:
            return M
        M = M.copy()
        if not _CRBA_FULL:
            M[self._lower] = M.T[self._lower]
        return M

    # ------------------------------------------------------------------ validation
    def check_q(self, q) -> np.ndarray:
        """``q`` as a finite float vector of length nq (:func:`idyn.validation.vector`; a float64
        array of that size is tested by one compiled pass) whose unit-norm blocks (free-flyer
        quaternions, continuous joints' (cos, sin)) are unit (:meth:`check_quaternions`)."""
        if type(q) is np.ndarray and q.dtype == np.float64 and q.shape == self._q_shape and validation.finite(q):
            return self.check_quaternions(q)
        return self.check_quaternions(validation.vector(q, self.nq, "q"))

    def check_quaternions(self, q: np.ndarray) -> np.ndarray:
        """``q`` (a float vector of length nq) if every unit-norm block in it (:attr:`unit_blocks`:
        the quaternion of every free flyer, pinocchio's (x, y, z, w), and of every spherical
        joint; the (cos, sin) of every continuous or planar joint) has a norm within
        :data:`QUATERNION_TOL` of 1; else :class:`idyn.errors.QuaternionError` naming the joint.
        Not normalised silently: an unnormalised quaternion scales the rotation pinocchio builds
        from it (the torques were 85-635 % off), a scaled (cos, sin) changes the torques too, and
        a w-x-y-z quaternion passed as x-y-z-w is a caller's bug the norm cannot see."""
        if self._unit_blocks.shape[0] == 0 or _unit_blocks(q, self._unit_blocks, QUATERNION_TOL):
            return q
        for i, k, joint in self.unit_blocks:
            block = q[i:i + k].tolist()
            norm = math.sqrt(sum(x * x for x in block))
            if not abs(norm - 1.0) <= QUATERNION_TOL:
                what = "quaternion (x, y, z, w)" if k == 4 else "(cos, sin)"
                raise QuaternionError(
                    f"the {what} q[{i}:{i + k}] = ({', '.join(f'{x:.9g}' for x in block)}) of joint {joint!r} of "
                    f"model {self._model.name!r} has norm {norm:.9g}, not 1 within {QUATERNION_TOL:g}")
        return q

    def check_v(self, v, name: str = "v") -> np.ndarray:
        """``v`` (or another nv-vector called ``name``) as :meth:`check_q` checks q."""
        if type(v) is np.ndarray and v.dtype == np.float64 and v.shape == self._v_shape and validation.finite(v):
            return v
        return validation.vector(v, self.nv, name)

    def check_state(self, state) -> tuple[np.ndarray, np.ndarray]:
        """``(q, v)`` of a measured ``state`` (anything with ``q`` and ``v``), validated as
        :meth:`check_q` and :meth:`check_v` do, with the same typed errors.

        A control step hands one :class:`idyn.state.RobotState` to the planner, the balance term
        and the controller; its vectors are float vectors (checked when it was built), so here
        their sizes are compared and both are tested for finiteness in one compiled pass (about
        1 us instead of two :func:`idyn.validation.vector` calls, 4.5 us; the finiteness is
        tested again because the arrays can be changed in place after construction)."""
        q, v = state.q, state.v
        if type(state) is RobotState and q.shape == self._q_shape and v.shape == self._v_shape \
                and validation.finite(q) and validation.finite(v):
            return self.check_quaternions(q), v
        return self.check_q(q), self.check_v(v)

    # ------------------------------------------------------------------ dynamics
    def mass_matrix(self, q) -> np.ndarray:
        """M(q), symmetric positive definite, nv x nv (CRBA)."""
        return self._symmetric(pin.crba(self._model, self._data, self.check_q(q)))

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

    def joint_positions(self, q) -> np.ndarray:
        """The positions of the actuated joints (na) at configuration q: pinocchio's
        ``difference(neutral, q)`` on the actuated velocities, i.e. ``q[actuated_q]`` for joints
        with nq = nv and the angle in (-pi, pi] of a continuous joint (nq = 2: cos, sin). This is
        what :class:`idyn.state.Desired` ``.q`` holds."""
        return pin.difference(self._model, self._neutral, self.check_q(q))[self.actuated_v]

    def with_joint_positions(self, q, positions) -> np.ndarray:
        """A copy of q with the actuated joints at ``positions`` (na; :meth:`joint_positions`'s
        inverse): pinocchio's ``integrate(neutral, v)`` with v the positions on the actuated
        velocities, so a continuous joint's angle becomes its (cos, sin)."""
        q = self.check_q(q)
        v = np.zeros(self.nv)
        v[self.actuated_v] = validation.vector(positions, self.na, "positions")
        out = q.copy()
        out[self.actuated_q] = pin.integrate(self._model, self._neutral, v)[self.actuated_q]
        return out

    def joint_error(self, q, positions) -> np.ndarray:
        """``positions`` (na) minus the actuated joints' positions at q, as pinocchio's
        ``difference`` on the configuration manifold: the subtraction for joints with nq = nv,
        the shortest angle (in (-pi, pi]) for a continuous joint."""
        return pin.difference(self._model, self.check_q(q),
                              self.with_joint_positions(q, positions))[self.actuated_v]

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

        One pass of joint Jacobians serves all points (see :class:`Workspace`), which is what a
        control step with many contacts needs.
        """
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(frames) != points.shape[0]:
            raise InvalidInputError(f"{len(frames)} frames but {points.shape[0]} points")
        ws = self._workspace.compute(q, dynamics=False)
        return ws.point_jacobians(self.body_joints(frames), validation.matrix(points, (None, 3), "points"))

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


def _own(a: np.ndarray) -> np.ndarray:
    """A result of pinocchio as an array of our own: as returned when it is (:data:`_FRESH`)."""
    return a if _FRESH else a.copy()


class Workspace:
    """One pinocchio pass at a state (q, v) and the point quantities of any number of points.

    :meth:`compute` runs CRBA (M), RNEA at zero acceleration (h = C v + g), the joint Jacobians
    with their time variation and the frame placements once; everything else is numpy on the
    world-frame joint Jacobian J_j (6 x nv, [linear at the world origin; angular], the columns of
    the joints supporting body j). For a material point p of body j (paper Sec. 2.2, App. B):

    * Jacobian        J_p = J_lin - [p]x J_ang            (its columns restricted to j's support),
    * velocity        v_p = V_lin + omega x p              with (V_lin, omega) = J_j v,
    * drift Jdot v    a_p = A_lin + alpha x p + omega x v_p with (A_lin, alpha) = Jdot_j v,

    the last being the classical acceleration of p at vdot = 0 (paper eqs. 33-34). Bodies are
    given by joint index (:meth:`RobotModel.body_joints`); joint 0 is the static world.
    The arrays ``M``, ``h``, ``J``, ``dJ`` are owned by the workspace and overwritten by the
    next :meth:`compute`: copy them to keep them.
    """

    def __init__(self, model: RobotModel):
        self.model = model
        self._pm = model.pinocchio_model
        self._data = self._pm.createData()
        self.q: np.ndarray | None = None
        self.v: np.ndarray | None = None
        self.M: np.ndarray | None = None
        self.h: np.ndarray | None = None
        self.J = np.zeros((6, model.nv))
        self.dJ: np.ndarray | None = None
        #: whether the frame placements ``data.oMf`` are those of :attr:`q` (a pass without
        #: ``placements`` leaves the previous ones)
        self.placed = False

    @property
    def data(self) -> pin.Data:
        """The pinocchio Data of the last pass (placements ``oMi``, and ``oMf`` if :attr:`placed`;
        read-only use)."""
        return self._data

    def compute(self, q, v=None, *, dynamics: bool = True, drift: bool = True) -> "Workspace":
        """Evaluate the pass at (q, v); without ``v`` there is no h and no drift, without
        ``dynamics`` no M and no h (kinematics only), without ``drift`` no Jacobian time
        variation (``dJ``: point drifts unavailable; velocities still are). Returns self."""
        q = self.model.check_q(q)
        return self.compute_checked(q, None if v is None else self.model.check_v(v),
                                    dynamics=dynamics, drift=drift)

    def compute_checked(self, q: np.ndarray, v: np.ndarray | None = None, *, dynamics: bool = True,
                        drift: bool = True, placements: bool = True) -> "Workspace":
        """:meth:`compute` for a ``q`` (and ``v``) already validated by the caller (a controller
        checks its inputs once per step); without ``placements`` the frame placements of
        :attr:`data` are not updated (a control step reads only M, h and J)."""
        pm, data = self._pm, self._data
        self.q = q.copy()
        self.v = None if v is None else v.copy()
        self.M = self.model._symmetric(pin.crba(pm, data, q)) if dynamics else None
        self.h = _own(pin.nonLinearEffects(pm, data, q, self.v)) if dynamics and v is not None else None
        if v is None or not drift:
            self.J = _own(pin.computeJointJacobians(pm, data, q))
            self.dJ = None
        else:
            pin.computeJointJacobiansTimeVariation(pm, data, q, self.v)
            self.J, self.dJ = data.J.copy(), data.dJ.copy()
        if placements:
            pin.updateFramePlacements(pm, data)
        self.placed = placements
        return self

    def is_at(self, q, v=None) -> bool:
        """True when the last pass was at exactly (q, v) (v None: any velocity)."""
        if self.q is None or not np.array_equal(self.q, q):
            return False
        return v is None or (self.v is not None and np.array_equal(self.v, v))

    # ------------------------------------------------------------------ points
    def point_jacobians(self, joints: np.ndarray, points: np.ndarray) -> np.ndarray:
        """(k, 3, nv) linear Jacobians of the points of bodies ``joints`` at ``points``."""
        J = self.J
        px, py, pz = (points[:, i, None] for i in range(3))
        out = np.empty((points.shape[0], 3, self.model.nv))
        out[:, 0] = J[0] - py * J[5] + pz * J[4]
        out[:, 1] = J[1] - pz * J[3] + px * J[5]
        out[:, 2] = J[2] - px * J[4] + py * J[3]
        out *= self.model.support.take(joints, axis=0)[:, None, :]
        return out

    def directional_jacobian(self, joints_a: np.ndarray, joints_b: np.ndarray, points: np.ndarray,
                             directions: np.ndarray) -> np.ndarray:
        """(k, nv) rows d_i^T (J_A(p_i) - J_B(p_i)): the velocity of A's point relative to B's
        along d_i (the rows of N, S, T, paper App. B). Two matrix products for all rows:
        d^T (J_lin - [p]x J_ang) = d^T J_lin + (p x d)^T J_ang."""
        rows = directions @ self.J[:3] + cross(points, directions) @ self.J[3:]
        support = self.model.support
        if joints_b.any():
            rows *= support.take(joints_a, axis=0) - support.take(joints_b, axis=0)
        else:    # every body B is the world (joint 0, no support)
            rows *= support.take(joints_a, axis=0)
        return rows

    def _twists(self, joints: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """(k, 6) world twists [linear at the origin; angular] J_j v (or Jdot_j v) of bodies."""
        u, inverse = np.unique(joints, return_inverse=True)
        return ((self.model.support.take(u, axis=0) * self.v) @ rate.T).take(inverse, axis=0)

    def point_velocities(self, joints: np.ndarray, points: np.ndarray) -> np.ndarray:
        """(k, 3) world velocities of the material points (needs a pass with v)."""
        V = self._twists(joints, self._need_v(self.J))
        return V[:, :3] + cross(V[:, 3:], points)

    def point_drifts(self, joints: np.ndarray, points: np.ndarray) -> np.ndarray:
        """(k, 3) classical accelerations at vdot = 0 (Jdot v) of the material points."""
        V = self._twists(joints, self._need_v(self.J))
        A = self._twists(joints, self.dJ)
        omega = V[:, 3:]
        vel = V[:, :3] + cross(omega, points)
        return A[:, :3] + cross(A[:, 3:], points) + cross(omega, vel)

    def _need_v(self, J: np.ndarray) -> np.ndarray:
        if self.v is None:
            raise InvalidInputError("point velocities and drifts need a workspace computed with v")
        return J
