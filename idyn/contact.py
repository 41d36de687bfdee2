"""Contacts and the contact matrices of the paper (Sec. 2.3, 4.1, 5.1 and Appendix B).

A :class:`Contact` is a point between body A and body B (``body_b=None`` is the static world).
Sign conventions, fixed once for all of idyn:

* ``normal`` is the unit direction of the force that B exerts on A (for a foot on the ground it
  is the ground normal, pointing up);
* the gap ``phi`` is positive when the bodies are separated, negative when they overlap
  (paper eq. 9);
* a row of N maps v to the normal component of the velocity of A's material point relative to
  B's at the contact point, so N v = d(phi)/dt and a positive normal impulse z gives the
  generalized impulse N^T z (paper Appendix B).

Tangent directions s, t come from the rotation that takes the world z axis onto the normal by the
shortest arc. This frame is deterministic and continuous in the normal everywhere except at
n = -z (no frame field on the sphere can be continuous everywhere), and equals (x, y) on flat
ground, so forces reported as [normal, s, t] read naturally.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import numpy as np

from . import validation
from .kernels import contact_rows, framed_batch, tangent_rows
from .errors import InvalidInputError, NonFiniteError, ShapeError
from .model import RobotModel, Workspace, cross


#: gap (m) at or below which a contact is touching rather than arriving: the controllers hold
#: touching contacts (no-slip rows, the QP controllers' separation penalty) and let arriving
#: ones close
CONTACT_GAP = 1e-6
#: friction coefficients at or above this value mean no slip, and mu = inf is simulated with it:
#: the authors' simulator treated mu = 100 as no slip (paper Sec. 7.5; docs/conventions.md)
NO_SLIP_MU = 100.0


def tangent_frames(normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit tangents (s, t), each (m, 3), of (m, 3) unit normals: the shortest rotation taking
    z to n (Rodrigues, closed form) applied to x and y, so (s, t, n) is right-handed:

        s = (1 - nx^2 / (1 + nz), -nx ny / (1 + nz), -nx),
        t = (-nx ny / (1 + nz), 1 - ny^2 / (1 + nz), -ny),

    and s = x, t = -y at n = -z, where the shortest arc is not unique (a rotation about x).
    Compiled (:func:`idyn.kernels.tangent_rows`): every contact query of a control
    step forms them."""
    n = np.ascontiguousarray(normals, dtype=float)
    s, t = np.empty_like(n), np.empty_like(n)
    tangent_rows(n, s, t)
    return s, t


def tangent_frame(normal) -> tuple[np.ndarray, np.ndarray]:
    """Unit tangents (s, t) of one unit normal (see :func:`tangent_frames`)."""
    s, t = tangent_frames(np.reshape(normal, (1, 3)))
    return s[0], t[0]


@dataclass(frozen=True)
class Contact:
    """One contact point between ``body_a`` and ``body_b`` (None: the world).

    ``mu`` is the Coulomb coefficient; ``math.inf`` (or anything >= 100 for the no-slip
    controllers' purposes) means no slip. ``phi`` is the signed gap.
    """

    body_a: str
    body_b: str | None
    point: np.ndarray
    normal: np.ndarray
    mu: float
    phi: float = 0.0
    tangents: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)
    #: (3, 3) rows n, s, t, read-only (made once: every control step reads it)
    _frame: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        point = validation.vector(self.point, 3, "contact point")
        normal = validation.vector(self.normal, 3, "contact normal")
        norm = np.linalg.norm(normal)
        if norm < 1e-12:
            raise InvalidInputError("contact normal must be non-zero")
        mu = validation.scalar(self.mu, "friction coefficient mu")
        if np.isnan(mu) or mu < 0:
            raise InvalidInputError(f"friction coefficient must be >= 0, got {self.mu}")
        phi = validation.scalar(self.phi, "gap phi")
        if not np.isfinite(phi):
            raise InvalidInputError(f"gap phi must be finite, got {self.phi}")
        if self.body_a == self.body_b:
            raise InvalidInputError("a contact needs two different bodies")
        normal = normal / norm
        point = point.copy()              # the contact's own, read-only: a caller's buffer reused
        point.setflags(write=False)       # or rewritten later cannot move it (or make it NaN)
        normal.setflags(write=False)
        object.__setattr__(self, "point", point)
        object.__setattr__(self, "normal", normal)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "phi", phi)
        object.__setattr__(self, "tangents", tangent_frame(normal))
        self._set_frame()

    def _set_frame(self) -> None:
        frame = np.vstack((self.normal,) + tuple(self.tangents))
        frame.setflags(write=False)
        object.__setattr__(self, "_frame", frame)

    @classmethod
    def batch(cls, bodies, points, normals, mu, gaps=None, body_b=None) -> list["Contact"]:
        """m contacts from stacked arrays, validated once for the batch: what
        ``[Contact(a, b, p, n, mu_i, phi_i) for ...]`` gives, field for field, at a fraction of
        the cost (one check for the batch instead of one per contact; a testbed makes its
        contacts every control step).

        ``bodies``: m names of body A; ``points``, ``normals``: (m, 3) in world coordinates
        (normals of any non-zero length, normalised here); ``mu``: a scalar or (m,) friction
        coefficients (``inf``: no slip); ``gaps``: the signed gaps phi, a scalar or (m,) (None:
        touching, 0); ``body_b``: m names of body B, None in it or for all of them the world.
        A bad row raises :class:`idyn.errors.NonFiniteError` (a NaN or infinite point, normal
        or gap) or :class:`idyn.errors.InvalidInputError` (zero normal, mu NaN or negative,
        A = B), naming the row; arrays of the wrong shape :class:`idyn.errors.ShapeError`.
        Each contact's point, normal and frame are read-only views of one stack per batch."""
        return contact_batch(bodies, points, normals, mu, gaps, body_b)[0]

    @classmethod
    def _stacked(cls, body_a, body_b, points: np.ndarray, frames: np.ndarray, mu: list, phi: list) -> list:
        """Contacts without the checks, from validated stacks (a :class:`ContactSet`'s, a
        testbed's): each one's point and frame are views of ``points`` (m, 3) and the read-only
        ``frames`` (m, 3, 3; rows n, s, t), one allocation per stack instead of per contact, and
        its normal and tangents views of its frame's rows made on first use (:meth:`__getattr__`);
        ``mu``, ``phi``: floats."""
        new, out = object.__new__, []
        for a, b, p, f, mu_i, phi_i in zip(body_a, body_b, points, frames, mu, phi):
            c = new(cls)
            d = c.__dict__      # item by item: ~0.1 us per contact less than update(**fields)
            d["body_a"], d["body_b"], d["point"] = a, b, p
            d["mu"], d["phi"], d["_frame"] = mu_i, phi_i, f
            out.append(c)
        return out

    def __getattr__(self, name: str):
        """``normal`` and ``tangents`` of a contact made by :meth:`_stacked`, on first use: the
        views ``_frame[0]`` and ``(_frame[1], _frame[2])``, kept. A testbed makes its contacts
        every control step and the loop reads their frames, not these (~0.5 us per contact of
        views otherwise made and dropped). Only called for attributes not set."""
        frame = self.__dict__.get("_frame")
        if frame is None or name not in ("normal", "tangents"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.__dict__[name] = value = frame[0] if name == "normal" else (frame[1], frame[2])
        return value

    def with_friction(self, mu: float) -> "Contact":
        """The same contact with Coulomb coefficient ``mu``, sharing this one's arrays (they are
        not copied or re-validated: a friction cap applied every control step, see
        :class:`idyn.experiments.references.QuadrupedReference`, costs one object)."""
        mu = mu if type(mu) is float else validation.scalar(mu, "friction coefficient mu")
        if math.isnan(mu) or mu < 0:     # math, not np.isnan: a ufunc on a scalar costs ~1 us
            raise InvalidInputError(f"friction coefficient must be >= 0, got {mu}")
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__, mu=mu)
        return c

    def frame(self) -> np.ndarray:
        """3 x 3 matrix with rows n, s, t (world to contact-frame rotation), read-only."""
        return self._frame


class ContactSet:
    """m contacts as arrays: the batched form of a list of :class:`Contact` (same conventions).

    ``body_a``/``body_b`` are sequences of body names (``None`` in ``body_b``: the world),
    ``points`` and ``normals`` are (m, 3) in world coordinates, ``mu`` and ``phi`` (m,).
    Normals are normalised and the contact frames (rows n, s, t) computed for all contacts at
    once; :func:`contact_jacobians` and :func:`contact_drift` take either form.
    """

    __slots__ = ("body_a", "body_b", "points", "normals", "mu", "phi", "tangents")

    def __init__(self, body_a, body_b, points, normals, mu, phi=None):
        self.body_a, self.body_b = tuple(body_a), tuple(body_b)
        m = len(self.body_a)
        if len(self.body_b) != m:
            raise InvalidInputError(f"{m} bodies A but {len(self.body_b)} bodies B")
        points = validation.matrix(np.reshape(points, (-1, 3)), (m, 3), "contact points")
        normals = validation.matrix(np.reshape(normals, (-1, 3)), (m, 3), "contact normals")
        norms = np.sqrt(np.einsum("ij,ij->i", normals, normals))
        if (norms < 1e-12).any():
            raise InvalidInputError("contact normals must be non-zero")
        mu = np.asarray(mu, dtype=float)
        mu = np.full(m, float(mu)) if mu.ndim == 0 else mu.copy()
        if mu.shape != (m,) or np.isnan(mu).any() or (mu < 0).any():
            raise InvalidInputError(f"need {m} friction coefficients >= 0 (inf: no slip), got {mu}")
        phi = np.zeros(m) if phi is None else validation.vector(phi, m, "gaps phi").copy()
        if any(a == b for a, b in zip(self.body_a, self.body_b)):
            raise InvalidInputError("a contact needs two different bodies")
        self.points, self.normals, self.mu, self.phi = points, normals / norms[:, None], mu, phi
        self.tangents = tangent_frames(self.normals)

    @classmethod
    def _trusted(cls, body_a, body_b, points, normals, mu, phi) -> "ContactSet":
        """Without the checks, for arrays a caller built valid (finite, unit normals, mu >= 0)."""
        out = cls.__new__(cls)
        out.body_a, out.body_b = tuple(body_a), tuple(body_b)
        out.points, out.normals, out.mu, out.phi = points, normals, mu, phi
        out.tangents = tangent_frames(normals)
        return out

    @classmethod
    def from_contacts(cls, contacts) -> "ContactSet":
        """The arrays of a list of (already validated) :class:`Contact` objects."""
        if isinstance(contacts, ContactSet):
            return contacts
        contacts = list(contacts)
        out = cls.__new__(cls)
        out.body_a = tuple(c.body_a for c in contacts)
        out.body_b = tuple(c.body_b for c in contacts)
        out.points = np.array([c.point for c in contacts], dtype=float).reshape(-1, 3)
        frames = np.array([c._frame for c in contacts], dtype=float).reshape(-1, 3, 3)
        out.normals, out.tangents = frames[:, 0], (frames[:, 1], frames[:, 2])
        out.mu = np.array([c.mu for c in contacts], dtype=float)
        out.phi = np.array([c.phi for c in contacts], dtype=float)
        return out

    @property
    def m(self) -> int:
        return len(self.body_a)

    def __len__(self) -> int:
        return len(self.body_a)

    def frames(self) -> np.ndarray:
        """(m, 3, 3): per contact the rows n, s, t (world to contact-frame rotation).
        (Three row assignments: ``np.stack`` costs twice as much in its Python wrapper.)"""
        frames = np.empty((len(self.body_a), 3, 3))
        frames[:, 0] = self.normals
        frames[:, 1], frames[:, 2] = self.tangents
        return frames

    def contacts(self) -> list[Contact]:
        """The same contacts as :class:`Contact` objects (their frames are views of one
        read-only stack of all frames: one numpy call instead of one per contact; their points
        views of :attr:`points`)."""
        frames = self.frames()
        frames.setflags(write=False)
        return Contact._stacked(self.body_a, self.body_b, self.points, frames, self.mu.tolist(), self.phi.tolist())


#: the messages of :func:`idyn.kernels.framed_batch`'s failure codes
_ROW_ERRORS = {1: (NonFiniteError, "points, normals and gaps must be finite"),
               2: (InvalidInputError, "the normal must be non-zero"),
               3: (InvalidInputError, "the friction coefficient must be >= 0 (inf: no slip)")}


def contact_batch(bodies, points, normals, mu, gaps=None, body_b=None) -> tuple[list[Contact], np.ndarray, np.ndarray]:
    """:meth:`Contact.batch` with the stacks it builds: returns the contacts, their points (m, 3)
    and their frames (m, 3, 3; rows n, s, t), two read-only arrays of which each contact's point,
    normal, tangents and frame are views (a caller that works on all contacts at once, e.g. a
    testbed attributing sensed forces, reads the stacks). The form is checked here, the numbers
    by one compiled call (:func:`idyn.kernels.framed_batch`)."""
    bodies = tuple(bodies)
    m = len(bodies)
    body_b = (None,) * m if body_b is None else tuple(body_b)
    try:
        if isinstance(mu, (str, bytes)) or isinstance(gaps, (str, bytes)):
            raise TypeError(f"got text {mu!r}, {gaps!r}")       # numpy would read "0.5" as 0.5
        points = np.array(points, dtype=float)          # the contacts' own copy
        normals = np.asarray(normals, dtype=float)
        gaps = np.zeros(m) if gaps is None else np.asarray(gaps, dtype=float)
        mu = np.asarray(mu, dtype=float)
    except (TypeError, ValueError) as e:     # strings, None, ragged lists
        raise InvalidInputError(f"contact batch of {m}: points, normals, mu and gaps must be real numbers: {e}") from None
    if gaps.ndim == 0:
        gaps = gaps.repeat(m)             # np.full costs half as much again
    if mu.ndim == 0:
        mu = mu.repeat(m)
    if points.shape != (m, 3) or normals.shape != (m, 3) or gaps.shape != (m,) or mu.shape != (m,) \
            or len(body_b) != m:
        raise ShapeError(f"{m} contacts need points and normals of shape ({m}, 3), mu and gaps scalars or of "
                         f"shape ({m},) and {m} bodies B; got {points.shape}, {normals.shape}, {mu.shape}, "
                         f"{gaps.shape}, {len(body_b)}")
    if body_b.count(None) != m and any(map(operator.eq, bodies, body_b)):
        i = next(i for i in range(m) if bodies[i] == body_b[i])
        raise InvalidInputError(f"contact row {i}: a contact needs two different bodies, got {bodies[i]!r} twice")
    frames = np.empty((m, 3, 3))
    code = framed_batch(points, normals, gaps, mu, frames)
    if code:
        error, message = _ROW_ERRORS[code % 4]
        i = code // 4
        raise error(f"contact row {i} (body {bodies[i]!r}): {message}; got point {points[i].tolist()}, "
                    f"normal {normals[i].tolist()}, gap {gaps[i]}, mu {mu[i]}")
    frames.setflags(write=False)
    points.setflags(write=False)
    return Contact._stacked(bodies, body_b, points, frames, mu.tolist(), gaps.tolist()), points, frames


@dataclass(frozen=True)
class ContactJacobians:
    """N, S, T (each m x nv), the gaps phi and the friction coefficients of m contacts."""

    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    phi: np.ndarray
    mu: np.ndarray

    @property
    def m(self) -> int:
        return self.N.shape[0]

    @property
    def D(self) -> np.ndarray:
        """The friction pyramid directions [S; -S; T; -T] (4m x nv, paper Sec. 5.1)."""
        return friction_pyramid(self.S, self.T)

    def stacked(self) -> np.ndarray:
        """[N; S; T] (3m x nv): the full contact Jacobian, normal rows first."""
        return np.vstack((self.N, self.S, self.T))

    @classmethod
    def from_stacked(cls, J: np.ndarray, phi: np.ndarray, mu: np.ndarray) -> "ContactJacobians":
        """N, S, T as views of the rows of ``J = [N; S; T]`` (3m x nv), which :attr:`rows` keeps:
        a caller that needs the stacked matrix reads it there instead of re-stacking."""
        m = phi.shape[0]
        out = object.__new__(cls)     # the fields set at once: the frozen dataclass's __init__ sets
        out.__dict__.update(N=J[:m], S=J[m:2 * m], T=J[2 * m:], phi=phi, mu=mu, rows=J)   # each apart
        return out

    #: [N; S; T] when the three are views of one array (:meth:`from_stacked`), else None
    rows = None


def friction_pyramid(S: np.ndarray, T: np.ndarray) -> np.ndarray:
    """D = [S; -S; T; -T], the four-edge linearized friction cone of paper Sec. 5.1."""
    return np.vstack((S, -S, T, -T))


def stacked_contact_jacobian(workspace: Workspace, contacts: ContactSet) -> np.ndarray:
    """[N; S; T] (3m x nv) of ``contacts`` from a computed :class:`Workspace` (paper App. B).

    Row i of N is n_i^T (J_A(p_i) - J_B(p_i)): the normal velocity of A's material point
    relative to B's; S and T likewise along the tangents. All 3m rows are two matrix products
    (:meth:`Workspace.directional_jacobian`).
    """
    model = workspace.model
    p = contacts.points
    directions = np.concatenate((contacts.normals,) + tuple(contacts.tangents))
    return _directional_rows(workspace, model.body_joints(contacts.body_a), model.body_joints(contacts.body_b),
                             np.concatenate((p, p, p)), directions)


def _directional_rows(workspace: Workspace, ja: np.ndarray, jb: np.ndarray, points: np.ndarray,
                      directions: np.ndarray) -> np.ndarray:
    """:meth:`Workspace.directional_jacobian` for rows ordered ``[N; S; T]`` (each block the m
    contacts ``ja``/``jb`` in order): the support mask is formed for m rows, not 3m, and
    broadcast (same numbers)."""
    J = workspace.J
    rows = directions.dot(J[:3]) + cross(points, directions).dot(J[3:])
    support = workspace.model.support
    mask = support.take(ja, axis=0)
    if jb.any():
        mask -= support.take(jb, axis=0)
    rows.reshape(3, ja.shape[0], rows.shape[1])[...] *= mask
    return rows


def contact_arrays(workspace: Workspace, contacts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``([N; S; T], phi, mu)`` of :func:`jacobians_at` as fresh arrays (a caller that adjusts the
    gaps builds its :class:`ContactJacobians` once).  A list of :class:`Contact` is read by
    :func:`contact_inputs` and its rows come from the compiled
    :func:`idyn.kernels.contact_rows` (the rows of :func:`stacked_contact_jacobian`,
    whose numpy version serves the simulator, to round-off)."""
    model = workspace.model
    if isinstance(contacts, ContactSet):
        if contacts.m == 0:
            return np.zeros((0, model.nv)), np.zeros(0), np.zeros(0)
        return stacked_contact_jacobian(workspace, contacts), contacts.phi.copy(), contacts.mu.copy()
    contacts = contacts if isinstance(contacts, list) else list(contacts)
    if not contacts:
        return np.zeros((0, model.nv)), np.zeros(0), np.zeros(0)
    ja, jb, two_bodies, frames, points, phi, mu = contact_inputs(model, contacts)
    J = np.empty((3 * len(contacts), model.nv))
    contact_rows(workspace.J, model.support, ja, jb, two_bodies, frames, points, J)
    return J, phi, mu


#: ``ja`` of no contacts, read-only as :meth:`idyn.model.RobotModel.body_joints`' arrays: compiled
#: callers then see one array type with and without contacts (one specialisation)
_NO_JOINTS = np.zeros(0, np.intp)
_NO_JOINTS.setflags(write=False)


def contact_inputs(model: RobotModel, contacts: list) -> tuple:
    """``(ja, jb, two_bodies, frames, points, phi, mu)``: what
    :func:`idyn.kernels.contact_rows` takes for a list of :class:`Contact` (``jb`` is
    ``ja`` when every body B is the world), read straight from the contacts' frames (no
    :class:`ContactSet` built), with their gaps and friction coefficients (fresh arrays)."""
    if not contacts:
        none = _NO_JOINTS
        return none, none, False, np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    ja, bodies_b = model.body_joints([c.body_a for c in contacts]), [c.body_b for c in contacts]
    two_bodies = bodies_b.count(None) != len(bodies_b)     # a list's count: no generator per step
    # two contiguous vectors, not the rows of one (m, 2) array: their layout then does not
    # change with m (a strided view of one element is contiguous), so compiled callers see one
    # type and load their machine code once (~0.1 s per large kernel)
    phi, mu = np.array([c.phi for c in contacts]), np.array([c.mu for c in contacts])
    return (ja, model.body_joints(bodies_b) if two_bodies else ja, two_bodies,
            np.array([c._frame for c in contacts]), np.array([c.point for c in contacts]), phi, mu)


def jacobians_at(workspace: Workspace, contacts) -> ContactJacobians:
    """:func:`contact_jacobians` from ``workspace``, which the caller computed at the contacts'
    configuration this step (not checked: a control step's own pinocchio pass)."""
    return ContactJacobians.from_stacked(*contact_arrays(workspace, contacts))


def _no_contacts(model: RobotModel) -> ContactJacobians:
    return ContactJacobians.from_stacked(np.zeros((0, model.nv)), np.zeros(0), np.zeros(0))


def _workspace(model: RobotModel, q, v, workspace: Workspace | None) -> Workspace:
    """``workspace`` if it was computed at (q, v), else the model's own, recomputed there."""
    if workspace is not None and workspace.model is model and workspace.is_at(q, v) \
            and (v is None or workspace.dJ is not None):
        return workspace
    return model._workspace.compute(q, v, dynamics=False)


def contact_jacobians(model: RobotModel, q, contacts, workspace: Workspace | None = None) -> ContactJacobians:
    """Build N, S, T for ``contacts`` (a list of :class:`Contact` or a :class:`ContactSet`) at
    configuration ``q`` (paper Appendix B).

    ``workspace``: a :class:`idyn.model.Workspace` already computed at ``q`` (for instance the
    one that gave M and h this step) is reused, so no pinocchio call is made here.
    """
    if not isinstance(contacts, ContactSet):
        contacts = list(contacts)
    if len(contacts) == 0:
        return _no_contacts(model)
    return jacobians_at(_workspace(model, q, None, workspace), contacts)


def contact_drift(model: RobotModel, q, v, contacts, workspace: Workspace | None = None) -> np.ndarray:
    """(m, 3) array of [Ndot v, Sdot v, Tdot v] per contact (contact frame held fixed).

    These are the velocity-product terms of the acceleration-level constraints (paper eqs.
    33-34); each is the relative classical acceleration of the contact points at vdot = 0.
    """
    cs = ContactSet.from_contacts(contacts)
    if cs.m == 0:
        return np.zeros((0, 3))
    ws = _workspace(model, q, v, workspace)
    rel = ws.point_drifts(model.body_joints(cs.body_a), cs.points) \
        - ws.point_drifts(model.body_joints(cs.body_b), cs.points)
    return np.einsum("mij,mj->mi", cs.frames(), rel)


def gaps(contacts) -> np.ndarray:
    """The gap vector phi of a list of contacts."""
    return np.array([c.phi for c in contacts], dtype=float)
