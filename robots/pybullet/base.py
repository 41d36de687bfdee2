"""Shared PyBullet machinery: one physics client per testbed, state conversion, contact geometry.

Every call passes ``physicsClientId``, so several testbeds coexist in one process.

State conversion (the part that is easy to get wrong, and is tested by a round trip):

* PyBullet's base pose is that of the base's *inertial* frame (centre of mass, principal axes),
  not of the URDF link frame; the two differ when the URDF base ``<inertial>`` has an origin or a
  non-diagonal inertia (PyBullet diagonalises it). The local inertial frame comes from
  ``getDynamicsInfo``: ``T_link = T_com * T_inertial^-1``.
* PyBullet's base velocity is the world-frame velocity of that centre of mass and the world
  angular velocity; pinocchio's free-flyer velocity is the linear velocity of the base frame
  origin and the angular velocity, both in the base frame:
  ``v = R^T (v_com - w x (c - o))``, ``w_b = R^T w``.
* Joints are mapped to pinocchio's actuated order by name.

Contact forces: ``getContactPoints`` filtered by body swaps A and B when needed and flips the
normal but *not* the lateral friction directions (checked on PyBullet 3.2.x), so forces are read
from the unfiltered list, in which ``normal * f_n + f_1 d_1 + f_2 d_2`` is consistently the force
on body A, and negated when the robot is body B.
"""
from __future__ import annotations

import math
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pinocchio as pin
import pybullet as pb

from idyn import validation
from idyn.contact import Contact
from idyn.errors import InvalidInputError, ModelLoadError
from idyn.model import RobotModel
from idyn.state import RobotState

from .kernels import ANY_LINK, attribute_rows, read_rows

#: Physics engine settings used by every testbed (see :func:`configure_engine`).
SOLVER_ITERATIONS = 150
#: (m) Bullet's default contact slop (PyBullet's ``contactSlop``): its solver treats a contact at
#: distance d as one at d + slop, so a contact may close this far beyond its gap
BULLET_CONTACT_SLOP = 1e-5
#: the largest friction coefficient Bullet simulates: it clamps the product of the two bodies'
#: lateral frictions at 10 (``calculateCombinedFriction``, btManifoldResult.cpp)
BULLET_MAX_FRICTION = 10.0
#: standard gravity (m/s^2), pinocchio's default, also given to PyBullet
GRAVITY = 9.81


def connect(gui: bool) -> int:
    """A new physics client (GUI or DIRECT); raises InvalidInputError if it cannot start."""
    client = pb.connect(pb.GUI if gui else pb.DIRECT)
    if client < 0:
        raise InvalidInputError("cannot start a PyBullet client (only one GUI per process)")
    return client


def configure_engine(client: int, dt: float) -> None:
    """Engine parameters for accurate contact forces at dt = 1 ms.

    * ``numSolverIterations`` 150 (default 50): the projected Gauss-Seidel solver converges the
      normal forces of four simultaneous foot contacts to well below 1 % of the weight;
    * split impulse on (PyBullet's default) for rigid contacts: penetration is corrected by a
      separate position-level impulse that is *not* included in the reported normal force and
      adds no momentum, so sensed forces are the forces that act on the velocities;
      contacts with contactStiffness/Damping (compliant ground) bypass it and use ERP/CFM;
    * cone friction (``enableConeFriction``): the Coulomb cone rather than a pyramid;
    * ``deterministicOverlappingPairs`` for reproducible runs; no sub-steps; restitution is
      zeroed per body.
    * Bullet's contact slop (:data:`BULLET_CONTACT_SLOP`) is kept here: its solver lets a
      contact close to ``gap + slop``, while the controllers' models (and ``contacts()``'s
      ``phi``) allow ``N v+ >= -phi/dt``. A testbed whose controllers must meet that constraint
      to 1e-5 m (a grasp) calls :func:`exact_gaps`.
    """
    pb.setPhysicsEngineParameter(
        fixedTimeStep=dt, numSubSteps=0, numSolverIterations=SOLVER_ITERATIONS,
        useSplitImpulse=1, enableConeFriction=1, deterministicOverlappingPairs=1,
        restitutionVelocityThreshold=0.0, physicsClientId=client)
    pb.setGravity(0.0, 0.0, -GRAVITY, physicsClientId=client)


def exact_gaps(client: int) -> None:
    """Contact slop 0: Bullet's velocity constraint of a contact at distance ``d`` is then
    ``N v+ >= -d/dt`` for ``d >= 0``, the non-interpenetration the controllers model (paper eq.
    47 with ``phi = d``). With the default slop of 1e-5 m a fingertip at gap 3e-7 m may close
    at 1 cm/s where the model allows 0.3 mm/s, and a contact at rest sits 1e-5 m deep, where
    the model's ``phi = -1e-5`` demands a separation of 1 cm/s (docs/results.md, grasping
    manipulator)."""
    pb.setPhysicsEngineParameter(contactSlop=0.0, physicsClientId=client)


def check_dt(dt) -> float:
    dt = float(dt)
    if not (np.isfinite(dt) and 0.0 < dt <= 0.1):
        raise InvalidInputError(f"time step dt must be in (0, 0.1] s, got {dt}")
    return dt


def _se3(pos, quat_xyzw) -> pin.SE3:
    return pin.XYZQUATToSE3(np.concatenate((pos, quat_xyzw)))


@lru_cache(maxsize=None)
def pybullet_urdf(urdf) -> Path:
    """A URDF PyBullet reads with the same masses as pinocchio.

    The URDF standard (and pinocchio) gives a link without ``<inertial>`` zero mass; PyBullet
    gives it 1 kg. Such links get an explicit zero inertial in a temporary copy (relative mesh
    paths made absolute); URDFs where every link has an inertial are used as they are.
    """
    urdf = Path(urdf)
    try:
        tree = ET.parse(str(urdf))
    except (OSError, ET.ParseError) as exc:
        raise ModelLoadError(f"cannot read URDF {urdf}: {exc}") from exc
    bare = [link for link in tree.getroot().findall("link") if link.find("inertial") is None]
    packaged = [m for m in tree.getroot().iter("mesh") if m.get("filename", "").startswith("package://")]
    if not bare and not packaged:
        return urdf
    for mesh in packaged:       # package://NAME/rest: NAME is a folder above the URDF (ROS layout)
        name, _, rest = mesh.get("filename")[len("package://"):].partition("/")
        for folder in urdf.resolve().parents:
            if folder.name == name or (folder / name).is_dir():
                mesh.set("filename", str((folder if folder.name == name else folder / name) / rest))
                break
    for link in bare:
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value="0")
        ET.SubElement(inertial, "inertia", ixx="0", ixy="0", ixz="0", iyy="0", iyz="0", izz="0")
    for mesh in tree.getroot().iter("mesh"):
        name = mesh.get("filename", "")
        if name and "://" not in name and not Path(name).is_absolute():
            mesh.set("filename", str((urdf.parent / name).resolve()))
    out = Path(tempfile.mkdtemp(prefix="idyn_urdf_")) / urdf.name  # once per process (cached)
    tree.write(str(out))
    return out


#: (kg) PyBullet's mass of a massless floating root link (:class:`MultiBodyMap`)
MASSLESS_ROOT = 1e-9


class MultiBodyMap:
    """A URDF multibody in PyBullet mapped onto a pinocchio :class:`RobotModel`.

    Loads the URDF with inertias from the file, maps joints and links by name, turns the default
    velocity motors off (pure torque control), and zeroes damping, joint friction and restitution.
    Fixed links are *not* merged: PyBullet's ``URDF_MERGE_FIXED_LINKS`` drops the merged link's
    inertial origin (the LINKS shank's centre of mass moves from 0.05 m along the link to its
    joint; a1's calf COM moves by 8 cm), which made PyBullet's dynamics disagree with pinocchio's
    by thousands of rad/s^2. A fixed child (a foot) stays its own PyBullet link instead.
    """

    def __init__(self, client: int, model: RobotModel, urdf, base_position=(0.0, 0.0, 0.0)):
        self.client = client
        self.model = model
        flags = pb.URDF_USE_INERTIA_FROM_FILE
        try:
            self.body = pb.loadURDF(str(pybullet_urdf(urdf)), basePosition=list(base_position),
                                    useFixedBase=not model.floating_base, flags=flags,
                                    physicsClientId=client)
        except pb.error as exc:
            raise ModelLoadError(f"PyBullet cannot load {urdf}: {exc}") from exc
        self.floating = model.floating_base
        self.link_of_joint: dict[str, int] = {}
        self.link_of_name: dict[str, int] = {pb.getBodyInfo(self.body, physicsClientId=client)[0].decode(): -1}
        for j in range(pb.getNumJoints(self.body, physicsClientId=client)):
            info = pb.getJointInfo(self.body, j, physicsClientId=client)
            self.link_of_joint[info[1].decode()] = j
            self.link_of_name[info[12].decode()] = j
        missing = [n for n in model.actuated_joint_names if n not in self.link_of_joint]
        if missing:
            raise ModelLoadError(f"joints {missing} of the model are not in PyBullet's {urdf}")
        #: PyBullet joint indices in pinocchio's actuated order
        self.joints = [self.link_of_joint[n] for n in model.actuated_joint_names]
        if self.floating and pb.getDynamicsInfo(self.body, -1, physicsClientId=client)[0] == 0.0:
            # a massless root link (a "base" fixed to the "trunk" that carries the mass, as in
            # go1, anymal_c, b1) makes PyBullet's base static: the robot would hang in the air.
            # a root of MASSLESS_ROOT kg and 1e-12 kg m^2 makes it free, a change of 1e-10 relative
            # to a robot of 10 kg
            pb.changeDynamics(self.body, -1, mass=MASSLESS_ROOT, localInertiaDiagonal=[1e-12] * 3,
                              physicsClientId=client)
        for link in [-1] + list(range(pb.getNumJoints(self.body, physicsClientId=client))):
            pb.changeDynamics(self.body, link, linearDamping=0.0, angularDamping=0.0,
                              jointDamping=0.0, restitution=0.0, lateralFriction=1.0,
                              spinningFriction=0.0, rollingFriction=0.0, physicsClientId=client)
        pb.setJointMotorControlArray(self.body, self.joints, pb.VELOCITY_CONTROL,
                                     forces=[0.0] * len(self.joints), physicsClientId=client)
        #: PyBullet links without a collision shape, kept out of collision detection
        self.bare_links = exclude_bare_links(client, self.body)
        info = pb.getDynamicsInfo(self.body, -1, physicsClientId=client)
        pm = model.pinocchio_model
        base_link = pb.getBodyInfo(self.body, physicsClientId=client)[0].decode()
        # the free flyer's frame -> the base link's (not the identity when robots.from_urdf
        # re-expressed the free flyer in the body frame of a base link drawn along other axes)
        on_root = self.floating and pm.existFrame(base_link) \
            and pm.names[pm.frames[pm.getFrameId(base_link)].parentJoint] == "root_joint"
        link = pm.frames[pm.getFrameId(base_link)].placement if on_root else pin.SE3.Identity()
        #: free-flyer frame -> base inertial frame (PyBullet's base pose)
        self.base_inertial = link * _se3(info[3], info[4])
        self.mass = sum(pb.getDynamicsInfo(self.body, k, physicsClientId=client)[0]
                        for k in [-1] + list(range(pb.getNumJoints(self.body, physicsClientId=client))))
        idx = [(n, pm.joints[pm.getJointId(n)]) for n in model.actuated_joint_names]
        multi = [f"{n} ({j.shortname()})" for n, j in idx if j.nv != 1]
        if multi:
            raise ModelLoadError(f"PyBullet's joints have one coordinate; {urdf} has actuated joints {multi}")
        #: positions in q and v of the actuated joints (pinocchio's order)
        self.iq = np.array([j.idx_q for _, j in idx])
        self.iv = np.array([j.idx_v for _, j in idx])
        self._na = len(self.joints)
        #: PyBullet's joint positions are angles; with a continuous joint (two coordinates in q)
        #: they are read after the unactuated coordinates of q and put into q by pinocchio
        #: (RobotModel.with_joint_positions): the unactuated coordinates' indices, else None
        self._unactuated_q = None
        nq = model.nq
        if not model.flat_actuation:
            self._unactuated_q = np.setdiff1d(np.arange(model.nq), model.actuated_q)
            nq = self._unactuated_q.size + self._na
            self.iq = np.arange(self._unactuated_q.size, nq)
        #: (q, v) from :meth:`raw_state`
        self.reader = StateReader(self.iq, self.iv, nq, model.nv,
                                  (0, 0) if self.floating else None, self.base_inertial)

    # ---------------------------------------------------------------- frames and links
    def link_index(self, frame: str) -> int:
        """PyBullet link index that carries a pinocchio frame (-1: the base)."""
        if frame in self.link_of_name:
            return self.link_of_name[frame]
        pm = self.model.pinocchio_model
        jid = pm.frames[self.model.frame_id(frame)].parentJoint
        name = pm.names[jid]
        if jid == 0 or name == "root_joint":
            return -1
        return self.link_of_joint[name]

    # ---------------------------------------------------------------- state
    def raw_state(self) -> list[float]:
        """PyBullet's numbers of the robot's state as :class:`StateReader` reads them: the joint
        positions and velocities (pinocchio's actuated order), then for a floating base its
        :func:`base_raw`."""
        js = pb.getJointStates(self.body, self.joints, physicsClientId=self.client)
        raw = [s[0] for s in js]
        raw += [s[1] for s in js]
        if self.floating:
            raw += base_raw(self.client, self.body)
        return raw

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) of the robot coordinates in pinocchio conventions."""
        q, v = self.reader.read(self.raw_state())
        if self._unactuated_q is not None:
            n = self._unactuated_q.size
            full = self.model.neutral()
            full[self._unactuated_q] = q[:n]
            q = self.model.with_joint_positions(full, q[n:])
        return q, v

    def write(self, q, v) -> None:
        """Set PyBullet's state from pinocchio (q, v)."""
        c = self.client
        positions = q[self.iq] if self._unactuated_q is None else self.model.joint_positions(q)
        for j, qi, vi in zip(self.joints, positions, v[self.iv]):
            pb.resetJointState(self.body, j, float(qi), float(vi), physicsClientId=c)
        if self.floating:
            com, lin, ang = com_from_free_flyer(q[:7], v[:6], self.base_inertial)
            xyzquat = pin.SE3ToXYZQUAT(com)
            pb.resetBasePositionAndOrientation(self.body, xyzquat[:3].tolist(), xyzquat[3:].tolist(),
                                               physicsClientId=c)
            pb.resetBaseVelocity(self.body, lin.tolist(), ang.tolist(), physicsClientId=c)

    def apply_torques(self, tau: list[float]) -> None:
        """Motor torques ``tau`` (floats, pinocchio actuated order) for the next steps."""
        pb.setJointMotorControlArray(self.body, self.joints, pb.TORQUE_CONTROL, forces=tau,
                                     physicsClientId=self.client)

    def check_tau(self, tau) -> np.ndarray:
        return validation.vector(tau, self._na, "tau")


def exclude_bare_links(client: int, body: int) -> list[int]:
    """Take the links of ``body`` that have no collision shape out of collision detection (group
    and mask 0) and return them.

    PyBullet gives every link a collider, an empty compound for a link without ``<collision>``
    (the LINKS legs' 12 links); its bounding box still enters the broadphase, which pairs it
    with the terrain plane's unbounded box and with neighbouring links every step. Such pairs
    can produce no contact point, so filtering them out changes no number of a step (the contact
    manifolds, their order and the islands are those of the shaped links) and saves ~2-3 us of
    the ~50 us ``stepSimulation`` of a LINKS trot."""
    links = [-1] + list(range(pb.getNumJoints(body, physicsClientId=client)))
    bare = [k for k in links if not pb.getCollisionShapeData(body, k, physicsClientId=client)]
    for k in bare:
        pb.setCollisionFilterGroupMask(body, k, 0, 0, physicsClientId=client)
    return bare


def _cross(a, b) -> np.ndarray:
    """a x b for 3-vectors (np.cross costs ~20 us per call, this ~1 us)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def base_raw(client: int, body: int) -> tuple[float, ...]:
    """PyBullet's base of ``body``: the position and quaternion (x y z w) of its inertial frame,
    the world velocity of its centre of mass and its world angular velocity (13 numbers)."""
    pos, orn = pb.getBasePositionAndOrientation(body, physicsClientId=client)
    lin, ang = pb.getBaseVelocity(body, physicsClientId=client)
    return pos + orn + lin + ang


class StateReader:
    """Pinocchio's (q, v) from PyBullet's raw numbers of joints and at most one free flyer.

    ``iq``, ``iv``: the positions in q and v of the na joints; ``free_flyer``: the positions in
    q and v of the free flyer's 7 coordinates and 6 velocities, or None; ``inertial``: its link
    frame -> inertial frame (the base pose PyBullet reports is that of the inertial frame).

    The free-flyer conversion ``T_link = T_com T_inertial^-1``, ``v = R^T (v_com - w x (c - o))``,
    ``w_b = R^T w`` is one compiled call (:func:`.kernels.read_rows`); q and v are views of
    one new array, checked finite in the same call.
    """

    def __init__(self, iq, iv, nq: int, nv: int, free_flyer: tuple[int, int] | None, inertial: pin.SE3):
        self.nq, self.nv = nq, nv
        self._index = np.concatenate((iq, np.asarray(iv) + nq)).astype(np.int64)
        self._qo, self._vo = (-1, -1) if free_flyer is None else (free_flyer[0], nq + free_flyer[1])
        self._inverse = np.array(pin.SE3ToXYZQUAT(inertial.inverse()), dtype=float)

    def read(self, raw: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) from ``raw``: the joint positions, the joint velocities, then the free flyer's
        :func:`base_raw` if there is one. Raises NonFiniteError if PyBullet's state is not finite."""
        raw = np.fromiter(raw, float)
        out = np.empty(self.nq + self.nv)
        if not read_rows(raw, self._index, self._inverse, self._qo, self._vo, out):
            raise validation.NonFiniteError("PyBullet's state contains NaN or infinite values")
        return out[:self.nq], out[self.nq:]


def com_from_free_flyer(q7, v6, inertial: pin.SE3) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
    """Inverse of :func:`free_flyer_from_com`: (COM pose, world COM velocity, world angular)."""
    base = pin.XYZQUATToSE3(np.asarray(q7, dtype=float))
    com = base * inertial
    R = base.rotation
    ang = R @ v6[3:]
    lin = R @ v6[:3] + _cross(ang, com.translation - base.translation)
    return com, lin, ang


# -------------------------------------------------------------------- contact geometry
@dataclass(frozen=True)
class ClosestPoint:
    """Closest points between a probe shape (A) and a body (B)."""

    point_on_a: np.ndarray
    point_on_b: np.ndarray
    normal: np.ndarray    #: unit, from B towards A (direction of the force on A)
    distance: float       #: signed gap, negative when overlapping
    link_b: int


#: (m) how far beyond ``margin`` above a body's top a sphere must be for :meth:`SphereProbe.nearest`
#: to answer without PyBullet: a thousand times the ~1e-9 m by which PyBullet's heightfield
#: (heights stored in float32) can stand above the float64 heights it was made from
TOP_SLACK = 1e-6


class SphereProbe:
    """A collision-only sphere used to query the closest point of a body to a sphere."""

    def __init__(self, client: int, radius: float):
        self.client = client
        self.radius = float(radius)
        self.shape = pb.createCollisionShape(pb.GEOM_SPHERE, radius=self.radius, physicsClientId=client)

    def closest(self, centre, body: int, margin: float, top: float = math.inf) -> ClosestPoint | None:
        """The nearest point of ``body`` within ``margin`` of the sphere at ``centre``; ``top``:
        see :meth:`nearest`."""
        best = self.nearest(np.asarray(centre, dtype=float).tolist(), body, float(margin), top)
        if best is None:
            return None
        return ClosestPoint(np.array(best[5]), np.array(best[6]), np.array(best[7]),
                            float(best[8]), int(best[4]))

    def nearest(self, centre: list[float], body: int, margin: float, top: float = math.inf) -> tuple | None:
        """:meth:`closest` as PyBullet's raw contact-point tuple (index 6: point on ``body``, 7:
        normal towards the sphere, 8: signed distance), without array conversions; ``centre``:
        three floats, ``margin`` a float (a control step's query passes them as PyBullet reads them).

        ``top``: a height (world z) that no point of ``body`` exceeds, if known (a terrain's
        highest point). A sphere whose lowest point is more than ``margin`` + :data:`TOP_SLACK`
        above it is farther than ``margin`` from the body, and PyBullet would return no point
        (it returns those at a reported distance <= ``margin``, and the distance it reports is
        never below the vertical clearance, measured on the planes and the heightfield), so it is
        answered None without the query: the same answer, for a swing foot of a trot ~5 us less."""
        if centre[2] - self.radius - top > margin + TOP_SLACK:
            return None
        pts = pb.getClosestPoints(-1, body, margin, collisionShapeA=self.shape, collisionShapePositionA=centre,
                                  physicsClientId=self.client)
        if len(pts) < 2:
            return pts[0] if pts else None
        return min(pts, key=_distance)


# -------------------------------------------------------------------- sensed forces
@dataclass(frozen=True)
class BodyLink:
    """A PyBullet (body, link) pair; link None matches every link of the body."""

    body: int
    link: int | None = None

    def matches(self, body: int, link: int) -> bool:
        return body == self.body and (self.link is None or link == self.link)


def _distance(cp: tuple) -> float:
    return cp[8]


def contact_point_rows(client: int) -> np.ndarray:
    """Every PyBullet contact point as a row of :func:`.kernels.attribute_rows` (P, 19):
    body A, link A, body B, link B, the point on B (where B's surface is: a terrain or box
    contact point lies there), the normal, the normal force, the two lateral directions each
    followed by its force (newtons). Built as one flat list (a list of per-point tuples costs
    numpy's nested-sequence conversion, ~1 us more for four points)."""
    flat = []
    for cp in pb.getContactPoints(physicsClientId=client):
        flat += (cp[1], cp[3], cp[2], cp[4])
        flat += cp[6]
        flat += cp[7]
        flat.append(cp[9])
        flat += cp[11]
        flat.append(cp[10])
        flat += cp[13]
        flat.append(cp[12])
    return np.fromiter(flat, float).reshape(-1, 19)


def owner_pairs(owners: list[tuple[BodyLink, BodyLink]]) -> np.ndarray:
    """(m, 4) integers [body A, link A, body B, link B] of PyBullet (A, B) pairs, a link None
    as :data:`.kernels.ANY_LINK`."""
    return np.array([(a.body, ANY_LINK if a.link is None else a.link, b.body, ANY_LINK if b.link is None else b.link)
                     for a, b in owners], dtype=np.int64).reshape(-1, 4)


def contact_stacks(contacts: list[Contact]) -> tuple[np.ndarray, np.ndarray]:
    """The points (m, 3) and frames (m, 3, 3; rows n, s, t) of a list of contacts."""
    return (np.array([c.point for c in contacts], dtype=float).reshape(-1, 3),
            np.array([c.frame() for c in contacts], dtype=float).reshape(-1, 3, 3))


def attribute_forces(rows: np.ndarray, points: np.ndarray, frames: np.ndarray, pairs: np.ndarray,
                     radius: float) -> np.ndarray:
    """Sum PyBullet contact forces per contact and express them as [normal, s, t] (m x 3).

    ``rows``: :func:`contact_point_rows`; contact i is at ``points[i]`` with frame
    ``frames[i]`` between the PyBullet pair ``pairs[i]`` (:func:`owner_pairs`). A PyBullet point
    between the same pair is assigned to the nearest such contact if it lies within ``radius``
    of its point. One compiled call (:func:`.kernels.attribute_rows`).
    """
    out = np.empty((pairs.shape[0], 3))
    attribute_rows(rows, pairs, points, frames, float(radius), out)
    return out


# -------------------------------------------------------------------- testbed skeleton
class Testbed:
    """What every PyBullet testbed shares: its client, time, torque input and stepping.

    Subclasses set ``self.robot`` (a :class:`MultiBodyMap`) and implement ``state``,
    ``contacts`` and ``sensed_contact_forces``. Torques are pure motor torques (the default
    velocity motors are off) held constant until the next :meth:`apply`.
    """

    def __init__(self, dt: float, gui: bool):
        self.dt = check_dt(dt)
        self.client = connect(gui)
        configure_engine(self.client, self.dt)
        self.t = 0.0
        self._state: RobotState | None = None
        self._tau: list[float] | None = None
        self._stepped = False        # contact forces exist only after a step since reset
        self._remember([], owner_pairs([]), *contact_stacks([]))

    # subclasses call this after loading the robot
    def _start(self, robot: MultiBodyMap) -> None:
        self.robot = robot
        self._tau = [0.0] * len(robot.joints)

    @property
    def na(self) -> int:
        return len(self.robot.joints)

    def apply(self, tau) -> None:
        """Set the actuated joint torques (pinocchio actuated order), held until changed."""
        self._tau = self.robot.check_tau(tau).tolist()   # a copy, in the form PyBullet reads

    def step(self) -> None:
        """Advance the simulation by dt with the held torques."""
        self._before_step()
        self.robot.apply_torques(self._tau)
        pb.stepSimulation(physicsClientId=self.client)
        self._stepped = True
        self._state = None
        self.t += self.dt

    def state(self) -> RobotState:
        """The measured state (q, v) in pinocchio conventions at the current time (cached per step)."""
        if self._state is None:
            self._state = RobotState.prechecked(*self._read(), self.t)   # read() checks q, v finite
        return self._state

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) as float64 vectors checked finite (a :class:`StateReader`'s)."""
        return self.robot.read()

    def _before_step(self) -> None:
        """Hook for per-step updates (friction fields)."""

    def _reset_time(self) -> None:
        self.t = 0.0
        self._stepped = False
        self._state = None
        self._tau = [0.0] * self.na

    def _remember(self, contacts: list[Contact], pairs: np.ndarray, points: np.ndarray,
                  frames: np.ndarray) -> None:
        """Keep the last :meth:`contacts` list, its PyBullet pairs (:func:`owner_pairs`) and its
        point and frame stacks (:func:`contact_stacks`) for :meth:`sensed_contact_forces`."""
        self._contacts, self._pairs, self._points, self._frames = contacts, pairs, points, frames

    def _sensed(self, points, frames, pairs, radius: float) -> np.ndarray:
        if not self._stepped or not pairs.shape[0]:
            return np.zeros((pairs.shape[0], 3))
        return attribute_forces(contact_point_rows(self.client), points, frames, pairs, radius)

    def _normal_total(self, a: BodyLink, b: BodyLink) -> float:
        """Sum of PyBullet normal forces between everything matching ``a`` and ``b`` (N)."""
        if not self._stepped:
            return 0.0
        total = 0.0
        for cp in pb.getContactPoints(physicsClientId=self.client):
            if ((a.matches(cp[1], cp[3]) and b.matches(cp[2], cp[4]))
                    or (b.matches(cp[1], cp[3]) and a.matches(cp[2], cp[4]))):
                total += cp[9]
        return total

    def close(self) -> None:
        """Disconnect the physics client (idempotent)."""
        if getattr(self, "client", None) is not None:
            try:
                pb.disconnect(physicsClientId=self.client)
            except pb.error:
                pass
            self.client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
