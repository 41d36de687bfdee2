"""Shared MuJoCo machinery: a URDF compiled by MuJoCo and mapped onto a pinocchio model.

The MuJoCo model is built from the same URDF file pinocchio reads (``mujoco.MjSpec``): visual
geometry dropped, fixed joints kept as welded bodies (``fusestatic`` off, so every URDF link is a
MuJoCo body of the same name), a free joint added to the root link of a floating-base robot,
joint damping, armature and friction zeroed (pure torque control, as the PyBullet testbeds).
The robot's geoms collide with the environment but not with each other (PyBullet's default for a
URDF), and the environment's geoms have priority, so a contact's friction and softness are the
environment's.

State conversion (checked against pinocchio's forward kinematics by the tests):

* MuJoCo's free joint holds the root link's *frame* (not its centre of mass): qpos = [x y z,
  qw qx qy qz], qvel = [linear velocity of the frame origin in the world frame, angular velocity
  in the body frame]. Pinocchio: q = [x y z, qx qy qz qw], v = [R^T v_world, w_body].
* A hinge or slide joint is one qpos and one qvel; pinocchio's unbounded revolute (a URDF
  ``continuous`` joint) is q = [cos a, sin a].
* Joints are mapped to pinocchio's actuated order by name; torques enter as ``qfrc_applied``.

Stepping is MuJoCo's ``mj_step1`` (positions, velocities, collision: the contacts of the coming
step) at the current state, then ``mj_step2`` after the torques are set; with the Euler
integrator the pair is exactly ``mj_step``. So the contacts a testbed reports at a state are the
ones the next step resolves, and after the step ``mj_contactForce`` gives the forces of exactly
those contacts.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin

from idyn import validation
from idyn.errors import InvalidInputError, ModelLoadError
from idyn.model import RobotModel
from idyn.state import RobotState

try:
    import mujoco
except ImportError as exc:      # pragma: no cover - the dependency is declared in pyproject.toml
    raise ImportError("robots.mujoco needs MuJoCo: pip install mujoco (or idyn[mujoco])") from exc

#: standard gravity (m/s^2), pinocchio's default, also given to MuJoCo
GRAVITY = 9.81
#: pinocchio's name of a floating base's free-flyer joint, given to MuJoCo's free joint too
ROOT_JOINT = "root_joint"


def check_dt(dt) -> float:
    dt = float(dt)
    if not (np.isfinite(dt) and 0.0 < dt <= 0.1):
        raise InvalidInputError(f"time step dt must be in (0, 0.1] s, got {dt}")
    return dt


def _mesh_path(urdf: Path, name: str) -> str:
    """An absolute path for a URDF mesh file name (relative to the URDF, or ``package://pkg/rest``
    looked up as ``rest`` under the URDF's folder and its parents)."""
    if name.startswith("package://"):
        rest = name[len("package://"):].split("/", 1)[-1]
        for folder in [urdf.parent, *urdf.parent.parents]:
            if (folder / rest).is_file():
                return str(folder / rest)
            pkg = name[len("package://"):]
            if (folder / pkg).is_file():
                return str(folder / pkg)
        raise ModelLoadError(f"cannot find mesh {name} of {urdf} under its folder or parents")
    path = Path(name)
    return str(path if path.is_absolute() else (urdf.parent / path).resolve())


#: relative floor (of the largest principal moment) below which :func:`physical_inertia` raises
#: a principal moment, and the relative margin it keeps over the triangle inequality
INERTIA_FLOOR = 1e-6
#: (m) the sphere whose inertia :func:`physical_inertia` gives a point mass (a link with mass and
#: no inertia): 5.5e-6 kg m^2 for laikago's 13.7 kg chassis, against the robot's 0.29-0.74 kg m^2
POINT_MASS_RADIUS = 1e-3


def physical_inertia(inertia: np.ndarray, mass: float = 0.0) -> np.ndarray:
    """The nearest inertia MuJoCo accepts for a body of positive ``mass``: principal moments
    positive (at least :data:`INERTIA_FLOOR` times the largest) and satisfying the triangle
    inequality A + B >= C, the smallest raised to C - B where it does not; the principal axes
    kept; no moment at all (a point mass): a solid sphere of radius :data:`POINT_MASS_RADIUS`.
    ``inertia`` (3, 3) is returned unchanged when it is already physical (or ``mass`` is 0).
    Public URDFs carry a few that are not (a dummy root link with one non-zero moment, a camera's
    or a thigh's moments 4 % short of the triangle, laikago's 13.7 kg chassis with none), which
    pinocchio takes and MuJoCo refuses to compile; the change is small against the robot's
    (docs/robots.md)."""
    e, R = np.linalg.eigh(inertia)
    top = max(e[2], 0.0)
    if top <= 0.0:
        if mass > 0.0:
            return 0.4 * mass * POINT_MASS_RADIUS ** 2 * np.eye(3)
        return inertia
    floor = INERTIA_FLOOR * top
    fixed = np.maximum(e, floor)
    if fixed[0] + fixed[1] < fixed[2] * (1.0 + INERTIA_FLOOR):
        fixed[0] = fixed[2] * (1.0 + INERTIA_FLOOR) - fixed[1]
    if np.array_equal(fixed, e):
        return inertia
    return (R * fixed) @ R.T


def _repair_inertias(root) -> None:
    """:func:`physical_inertia` on every URDF link of positive mass (massless links: welded
    frames, which MuJoCo takes as they are)."""
    names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    for inertial in root.iter("inertial"):
        mass, inertia = inertial.find("mass"), inertial.find("inertia")
        if mass is None or inertia is None or float(mass.get("value", 0.0)) <= 0.0:
            continue
        xx, xy, xz, yy, yz, zz = (float(inertia.get(k, 0.0)) for k in names)
        I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        fixed = physical_inertia(I, float(mass.get("value", 0.0)))
        if fixed is not I:
            for k, (i, j) in zip(names, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
                inertia.set(k, repr(float(fixed[i, j])))


def urdf_spec(urdf, floating_base: bool) -> "mujoco.MjSpec":
    """A MuJoCo spec of the URDF ``urdf``: collision geometry only (mesh paths made absolute),
    every link a body, its inertia the URDF's (none: massless, as in pinocchio; not from the
    geometry), inertias MuJoCo refuses made physical (:func:`physical_inertia`), a free
    joint on the root link if ``floating_base``."""
    urdf = Path(urdf)
    try:
        root = ET.parse(str(urdf)).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ModelLoadError(f"cannot read URDF {urdf}: {exc}") from exc
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
    for mesh in root.iter("mesh"):
        mesh.set("filename", _mesh_path(urdf, mesh.get("filename", "")))
    _repair_inertias(root)
    for extension in root.findall("mujoco"):
        root.remove(extension)
    ext = ET.SubElement(root, "mujoco")
    ET.SubElement(ext, "compiler", discardvisual="true", fusestatic="false", strippath="false",
                  balanceinertia="false", inertiafromgeom="false", angle="radian")
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    except Exception as exc:          # MuJoCo raises ValueError with its parser's message
        raise ModelLoadError(f"MuJoCo cannot read {urdf}: {exc}") from exc
    for geom in spec.geoms:           # the robot's geoms touch the environment, not each other
        geom.contype, geom.conaffinity, geom.priority = 1, 0, 0
    if floating_base:
        base = spec.worldbody.first_body()
        if base is None:
            raise ModelLoadError(f"{urdf} has no link")
        base.add_freejoint().name = ROOT_JOINT
    return spec


class MjRobot:
    """A compiled MuJoCo model and data holding a URDF robot mapped onto a pinocchio model.

    ``spec``: the spec of :func:`urdf_spec` with the environment added (its geoms with
    ``conaffinity`` 1 and a higher ``priority`` than the robot's), compiled here with time step
    ``dt``. Every free-flyer joint of the pinocchio model (a floating base, a free body such as
    the manipulator's box) is MuJoCo's free joint of the same name.
    """

    def __init__(self, model: RobotModel, spec, dt: float):
        self.model = model
        try:
            self.mj = spec.compile()
        except Exception as exc:
            raise ModelLoadError(f"MuJoCo cannot compile the model: {exc}") from exc
        m = self.mj
        m.opt.timestep = dt
        m.dof_damping[:] = 0.0
        m.dof_armature[:] = 0.0
        m.dof_frictionloss[:] = 0.0
        self.data = mujoco.MjData(m)
        pm = model.pinocchio_model
        names = model.actuated_joint_names
        ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
        missing = [n for n, i in zip(names, ids) if i < 0]
        if missing:
            raise ModelLoadError(f"joints {missing} of the model are not in MuJoCo's model")
        joints = [pm.joints[pm.getJointId(n)] for n in names]
        one = [k for k, j in enumerate(joints) if j.nq == 1]
        two = [k for k, j in enumerate(joints) if j.nq == 2]
        if len(one) + len(two) != len(joints) or any(j.nv != 1 for j in joints):
            raise ModelLoadError("only 1-DOF actuated joints are supported")
        qadr, dadr = m.jnt_qposadr[ids], m.jnt_dofadr[ids]
        #: (pinocchio q index, MuJoCo qpos address) of 1-coordinate joints; of [cos, sin] joints
        self._q1 = (np.array([joints[k].idx_q for k in one], dtype=int), qadr[one])
        self._q2 = (np.array([joints[k].idx_q for k in two], dtype=int), qadr[two])
        #: pinocchio v index and MuJoCo dof address of each actuated joint (tau's order)
        self._iv = np.array([j.idx_v for j in joints], dtype=int)
        self._dof = np.asarray(dadr, dtype=int)
        #: per free flyer: pinocchio q index, v index, MuJoCo qpos address, dof address, and X (rotation,
        #: translation, quaternion), the placement of MuJoCo's body frame B on the flyer F (B = F X)
        self._free = []
        for jid in range(1, pm.njoints):
            if pm.joints[jid].shortname() != "JointModelFreeFlyer":
                continue
            mj_id = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, pm.names[jid])
            if mj_id < 0 or m.jnt_type[mj_id] != mujoco.mjtJoint.mjJNT_FREE:
                raise ModelLoadError(f"MuJoCo's model has no free joint {pm.names[jid]!r}")
            # MuJoCo's free joint moves its body's frame B; pinocchio's moves the flyer's frame F,
            # with B = F X (X the placement of B's frame on the flyer: not the identity when
            # robots.from_urdf re-expressed the free flyer, e.g. laikago's y-up base link)
            body = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(m.jnt_bodyid[mj_id]))
            X = pin.SE3.Identity()
            if body is not None and pm.existFrame(body) and pm.frames[pm.getFrameId(body)].parentJoint == jid:
                X = pm.frames[pm.getFrameId(body)].placement
            elif any(f.parentJoint == jid and f.type == pin.FrameType.BODY and not f.placement.isIdentity(1e-12)
                     for f in pm.frames):
                raise ModelLoadError(f"MuJoCo's body {body!r} on free joint {pm.names[jid]!r} is no frame of the "
                                     "model, whose free flyer is re-expressed: cannot map its state")
            self._free.append((pm.joints[jid].idx_q, pm.joints[jid].idx_v,
                               int(m.jnt_qposadr[mj_id]), int(m.jnt_dofadr[mj_id]),
                               X.rotation.copy(), X.translation.copy(), pin.Quaternion(X.rotation)))
        self.mass = float(m.body_mass.sum())
        self.na = len(names)

    def body_id(self, name: str) -> int:
        i = mujoco.mj_name2id(self.mj, mujoco.mjtObj.mjOBJ_BODY, name)
        if i < 0:
            raise ModelLoadError(f"MuJoCo's model has no body {name!r}")
        return i

    # ---------------------------------------------------------------- state
    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) of the robot in pinocchio conventions; NonFiniteError if MuJoCo's state is not finite."""
        qpos, qvel = self.data.qpos, self.data.qvel
        q, v = np.empty(self.model.nq), np.empty(self.model.nv)
        iq, adr = self._q1
        q[iq] = qpos[adr]
        iq, adr = self._q2
        q[iq], q[iq + 1] = np.cos(qpos[adr]), np.sin(qpos[adr])
        v[self._iv] = qvel[self._dof]
        for i, j, a, b, XR, Xp, Xq in self._free:      # B = F X (see __init__)
            qB = pin.Quaternion(qpos[a + 3], qpos[a + 4], qpos[a + 5], qpos[a + 6])
            qF = qB * Xq.conjugate()
            RB, RF = qB.toRotationMatrix(), qF.toRotationMatrix()
            q[i:i + 3] = qpos[a:a + 3] - RF @ Xp
            q[i + 3:i + 7] = qF.coeffs()
            wB = qvel[b + 3:b + 6]                     # MuJoCo: body-frame angular velocity,
            v[j + 3:j + 6] = XR @ wB                   # world-frame velocity of B's origin
            v[j:j + 3] = RF.T @ (qvel[b:b + 3] + np.cross(RB @ wB, q[i:i + 3] - qpos[a:a + 3]))
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise validation.NonFiniteError("MuJoCo's state contains NaN or infinite values")
        return q, v

    def write(self, q, v, data=None) -> None:
        """Set MuJoCo's state (of ``data``, default the testbed's) from pinocchio (q, v) (q, v
        checked by the caller)."""
        data = self.data if data is None else data
        qpos, qvel = data.qpos, data.qvel
        iq, adr = self._q1
        qpos[adr] = q[iq]
        iq, adr = self._q2
        qpos[adr] = np.arctan2(q[iq + 1], q[iq])
        qvel[self._dof] = v[self._iv]
        for i, j, a, b, XR, Xp, Xq in self._free:      # B = F X (see __init__)
            qF = pin.Quaternion(q[i + 6], q[i + 3], q[i + 4], q[i + 5])
            qB = qF * Xq
            RF = qF.toRotationMatrix()
            qpos[a:a + 3] = q[i:i + 3] + RF @ Xp
            qpos[a + 3], qpos[a + 4:a + 7] = qB.w, qB.coeffs()[:3]
            wF = v[j + 3:j + 6]
            qvel[b:b + 3] = RF @ (v[j:j + 3] + np.cross(wF, Xp))
            qvel[b + 3:b + 6] = XR.T @ wF

    def set_torques(self, tau: np.ndarray) -> None:
        self.data.qfrc_applied[:] = 0.0
        self.data.qfrc_applied[self._dof] = tau


_NO_FORCES = (np.zeros((0, 2), dtype=int), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))


class Testbed:
    """What every MuJoCo testbed shares: time, held torques, stepping and contact forces.

    Subclasses set ``self.robot`` (an :class:`MjRobot`) through :meth:`_start` and implement
    ``contacts`` (calling :meth:`_remember`). Torques are pure joint torques held until the next
    :meth:`apply`.
    """

    def __init__(self, dt: float):
        self.dt = check_dt(dt)
        self.t = 0.0
        self._state: RobotState | None = None
        self._contacts: list = []
        self._owners = np.zeros((0, 2), dtype=int)   # per reported contact: MuJoCo geom A, geom B
        self._frames = np.zeros((0, 3, 3))
        self._sensed = _NO_FORCES
        self._points = np.zeros((0, 3))

    def _start(self, robot: MjRobot) -> None:
        self.robot = robot
        self._tau = np.zeros(robot.na)

    @property
    def na(self) -> int:
        return self.robot.na

    def apply(self, tau) -> None:
        """Set the actuated joint torques (pinocchio actuated order), held until changed."""
        self._tau = validation.vector(tau, self.na, "tau").copy()

    def step(self) -> None:
        """Advance the simulation by dt with the held torques (``mj_step2`` of the state whose
        ``mj_step1`` already ran), keep the forces of the reported contacts, then ``mj_step1``
        at the new state."""
        m, d = self.robot.mj, self.robot.data
        self.robot.set_torques(self._tau)
        mujoco.mj_step2(m, d)
        self._sensed = self._contact_forces()
        self._before_collision()
        mujoco.mj_step1(m, d)
        self._state = None
        self.t += self.dt

    def _before_collision(self) -> None:
        """Hook run at each new state before MuJoCo's collision (per-state contact parameters)."""

    def state(self) -> RobotState:
        """The measured state (q, v) in pinocchio conventions at the current time (cached per step)."""
        if self._state is None:
            self._state = RobotState.prechecked(*self._read(), self.t)
        return self._state

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        return self.robot.read()

    def _restart(self) -> None:
        """After writing a state: forget time, torques and forces; run ``mj_step1`` there."""
        self.t = 0.0
        self._state = None
        self._tau = np.zeros(self.na)
        d = self.robot.data
        d.qacc_warmstart[:] = 0.0
        d.qfrc_applied[:] = 0.0
        d.time = 0.0
        self._before_collision()
        mujoco.mj_step1(self.robot.mj, d)
        self._sensed = _NO_FORCES
        self._remember([], np.zeros((0, 2), dtype=int), np.zeros((0, 3)), np.zeros((0, 3, 3)))

    def _remember(self, contacts: list, owners: np.ndarray, points: np.ndarray, frames: np.ndarray) -> None:
        """Keep the reported ``contacts``, their MuJoCo geom pairs (A, B), points and frames
        (rows n, s, t)."""
        self._contacts, self._owners, self._points, self._frames = contacts, owners, points, frames

    def _contact_forces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The step's MuJoCo contacts that carried a force: their geom pairs (k, 2), points (k, 3),
        the force on the pair's first geom in the world frame (k, 3) and the normal force (k,),
        from ``mj_contactForce`` (MuJoCo's contact frame, the force on geom2)."""
        d = self.robot.data
        con = d.contact
        active = np.flatnonzero(con.efc_address[:d.ncon] >= 0)
        forces, normal = np.empty((active.size, 3)), np.empty(active.size)
        f6 = np.zeros(6)
        for row, k in enumerate(active):
            mujoco.mj_contactForce(self.robot.mj, d, int(k), f6)
            forces[row] = -(con.frame[k].reshape(3, 3).T @ f6[:3])
            normal[row] = f6[0]
        pairs = np.stack((con.geom1[active], con.geom2[active]), axis=1).reshape(-1, 2)
        return pairs, con.pos[active].reshape(-1, 3), forces, normal

    def _normal_total(self, geoms_a, geoms_b) -> float:
        """Sum of the last step's MuJoCo normal forces between any geom of ``geoms_a`` and any of
        ``geoms_b`` (N)."""
        pairs, _, _, normal = self._sensed
        a, b = np.isin(pairs, list(geoms_a)), np.isin(pairs, list(geoms_b))
        return float(normal[(a[:, 0] & b[:, 1]) | (a[:, 1] & b[:, 0])].sum())

    def sensed_contact_forces(self) -> np.ndarray:
        """(n, 3) forces [normal, s, t] (N) on body A of each contact last returned by
        ``contacts()``, over the last step: each MuJoCo contact of the step goes to the nearest
        reported contact between the same two geoms (as robots.pybullet attributes its
        points); the sum is projected on the contact's frame (zero rows where there was none,
        and before the first step)."""
        out = np.zeros((len(self._contacts), 3))
        pairs, points, forces, _ = self._sensed
        if not len(out) or not len(pairs):
            return out
        owners = self._owners
        for (g1, g2), p, f in zip(pairs.tolist(), points, forces):
            same = np.flatnonzero((owners[:, 0] == g1) & (owners[:, 1] == g2))
            sign = 1.0
            if not same.size:
                same = np.flatnonzero((owners[:, 0] == g2) & (owners[:, 1] == g1))
                sign = -1.0
            if not same.size:
                continue
            i = same[np.argmin(np.linalg.norm(self._points[same] - p, axis=1))] if same.size > 1 else same[0]
            out[i] += sign * (self._frames[i] @ f)
        return out

    def close(self) -> None:
        """Nothing to release (MuJoCo's model and data are freed with the testbed)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
