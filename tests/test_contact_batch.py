"""The batched fast paths (Workspace, ContactSet, vectorized detection, the simulator's one-pass
step) against the straightforward per-contact computation they replace: N, S, T, drifts,
velocities, contact features and a whole simulator step agree to rounding."""
import numpy as np
import pytest

from idyn import robots
from idyn import Contact, contact_drift, contact_jacobians
from idyn.contact import ContactSet, contact_batch, contact_inputs, tangent_frame, tangent_frames
from idyn.errors import InvalidInputError, NonFiniteError, ShapeError
from idyn.sim import ContactProblem, Heightmap, Plane, StaticBox
from idyn.sim.geometry import sphere_box, sphere_heightmap, sphere_plane

ROUND = 1e-12


def random_q(model, rng):
    return model.integrate(model.neutral(), rng.uniform(-1.0, 1.0, model.nv), 1.0)


def reference_rows(model, q, contacts):
    """[N; S; T] one contact at a time from pinocchio's frame Jacobians (the old path)."""
    rows = []
    for c in contacts:
        J = model.frame_jacobian(q, c.body_a, c.point)[:3]
        if c.body_b is not None:
            J = J - model.frame_jacobian(q, c.body_b, c.point)[:3]
        rows.append(c.frame() @ J)
    return np.concatenate([np.array(rows)[:, k] for k in range(3)])


def reference_drift(model, q, v, contacts):
    out = []
    for c in contacts:
        a = model.point_drift(q, v, c.body_a, c.point)
        if c.body_b is not None:
            a = a - model.point_drift(q, v, c.body_b, c.point)
        out.append(c.frame() @ a)
    return np.array(out)


def random_contacts(model, frames, rng, count, world=True):
    out = []
    for _ in range(count):
        a, b = rng.choice(len(frames), 2, replace=False)
        n = rng.normal(size=3)
        out.append(Contact(frames[a], None if world else frames[b], rng.normal(scale=0.3, size=3), n,
                           float(rng.uniform(0, 2)), float(rng.normal(scale=1e-3))))
    return out


@pytest.mark.parametrize("robot", ["links", "a1"])
def test_quadruped_contact_matrices_and_drift_match_per_contact(robot):
    quad = robots.quadruped(robot)
    m = quad.model
    rng = np.random.default_rng(0)
    frames = list(quad.foot_frames) + [m.pinocchio_model.frames[2].name]
    for _ in range(3):
        q, v = random_q(m, rng), rng.normal(size=m.nv)
        contacts = random_contacts(m, frames, rng, 9)
        ref = reference_rows(m, q, contacts)
        for given in (contacts, ContactSet.from_contacts(contacts)):
            cj = contact_jacobians(m, q, given)
            np.testing.assert_allclose(cj.stacked(), ref, rtol=0, atol=ROUND)
            np.testing.assert_array_equal(cj.phi, [c.phi for c in contacts])
        np.testing.assert_allclose(contact_drift(m, q, v, contacts), reference_drift(m, q, v, contacts),
                                   rtol=0, atol=ROUND * max(1.0, np.abs(v).max() ** 2))


def test_no_contacts_give_empty_rows_in_every_form():
    """Zero contacts (a swing phase, a dropped box) as a list or a ContactSet: (0, nv) rows."""
    from idyn.contact import jacobians_at, stacked_contact_jacobian

    m = robots.quadruped("links").model
    q = m.neutral()
    ws = m.workspace().compute(q)
    empty = ContactSet((), (), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    assert stacked_contact_jacobian(ws, empty).shape == (0, m.nv)
    for given in ([], empty):
        for cj in (contact_jacobians(m, q, given), jacobians_at(ws, given)):
            assert cj.m == 0 and cj.N.shape == cj.S.shape == cj.T.shape == (0, m.nv)


def test_two_body_contacts_and_a_reused_workspace():
    """Fingertip-box contacts (both bodies move); a workspace computed at (q, v) is reused."""
    d = robots.manipulator()
    m = d.model_with_box
    rng = np.random.default_rng(1)
    q, v = d.combined_q(d.q0), rng.normal(size=m.nv)
    contacts = random_contacts(m, ["FINGERTIP_1", "FINGERTIP_2", "box", "ARM_LINK_3"], rng, 12, world=False)
    ws = m.workspace().compute(q, v)
    np.testing.assert_allclose(contact_jacobians(m, q, contacts, workspace=ws).stacked(),
                               reference_rows(m, q, contacts), rtol=0, atol=ROUND)
    np.testing.assert_allclose(contact_drift(m, q, v, contacts, workspace=ws),
                               reference_drift(m, q, v, contacts), rtol=0, atol=1e-10)
    # a stale workspace is not trusted: the answer is still the one at q2
    q2 = m.integrate(q, v, 0.01)
    np.testing.assert_allclose(contact_jacobians(m, q2, contacts, workspace=ws).stacked(),
                               reference_rows(m, q2, contacts), rtol=0, atol=ROUND)
    # M and h of the pass are the model's (the same pinocchio algorithms: measured equal; asserted
    # to 1e-12 of their largest entry)
    np.testing.assert_allclose(ws.M, m.mass_matrix(q), rtol=0, atol=1e-12 * np.abs(ws.M).max())
    np.testing.assert_allclose(ws.h, m.bias_forces(q, v), rtol=0, atol=1e-12 * np.abs(ws.h).max())
    frames = [c.body_a for c in contacts]
    pts = np.array([c.point for c in contacts])
    vel = ws.point_velocities(m.body_joints(frames), pts)
    np.testing.assert_allclose(vel, [m.point_velocity(q, v, f, p) for f, p in zip(frames, pts)], atol=ROUND)
    np.testing.assert_allclose(m.point_jacobians(q, frames, pts),
                               [m.frame_jacobian(q, f, p)[:3] for f, p in zip(frames, pts)], atol=ROUND)


def test_contact_inputs_read_both_bodies_only_when_some_body_b_moves():
    """contact_inputs gives the joints of bodies A and B (B's array is A's when every body B is
    the world) and the contacts' frames, points, gaps and friction as fresh arrays."""
    d = robots.manipulator()
    m = d.model_with_box
    rng = np.random.default_rng(3)
    names = ["FINGERTIP_1", "FINGERTIP_2", "box", "ARM_LINK_3"]
    world = random_contacts(m, names, rng, 3)
    for contacts in (world, world + random_contacts(m, names, rng, 2, world=False)):
        ja, jb, two_bodies, frames, points, phi, mu = contact_inputs(m, contacts)
        assert two_bodies == (contacts is not world)
        np.testing.assert_array_equal(ja, m.body_joints([c.body_a for c in contacts]))
        assert (jb is ja) if not two_bodies else np.array_equal(jb, m.body_joints([c.body_b for c in contacts]))
        np.testing.assert_array_equal(frames, [c.frame() for c in contacts])
        np.testing.assert_array_equal(points, [c.point for c in contacts])
        np.testing.assert_array_equal(phi, [c.phi for c in contacts])
        np.testing.assert_array_equal(mu, [c.mu for c in contacts])


def shortest_arc_tangents(n):
    """Oracle: the rotation about ``z x n`` by the angle between ``z`` and ``n`` (scipy's rotation
    vector, not the closed form the package uses) applied to ``x`` and ``y``."""
    from scipy.spatial.transform import Rotation

    axis = np.cross([0.0, 0.0, 1.0], n)
    angle = np.arctan2(np.linalg.norm(axis), n[2])
    rot = Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle if angle else np.zeros(3))
    return rot.apply([1.0, 0.0, 0.0]), rot.apply([0.0, 1.0, 0.0])


def test_tangent_frames_are_the_shortest_arc_rotation_of_x_and_y():
    """(s, t, n) right-handed and orthonormal, s and t the images of x and y under the shortest
    rotation taking z to n (module docstring of idyn.contact), s = x and t = -y at n = -z.
    The closed form divides by 1 + n_z: measured over 20,000 random normals, both the distance
    from the oracle and from orthonormality are at most 4 eps / (1 + n_z); asserted 16 times."""
    rng = np.random.default_rng(2)
    n = rng.normal(size=(50, 3))
    n[0] = (0.0, 0.0, -1.0)
    n[1] = (0.0, 0.0, 1.0)
    n /= np.linalg.norm(n, axis=1)[:, None]
    s, t = tangent_frames(n)
    for i in range(2, n.shape[0]):
        tol = 16 * np.finfo(float).eps / (1 + n[i, 2])
        frame = np.vstack((n[i], s[i], t[i]))
        np.testing.assert_allclose(frame @ frame.T, np.eye(3), rtol=0, atol=tol)
        assert np.linalg.det(np.vstack((s[i], t[i], n[i]))) == pytest.approx(1.0)
        np.testing.assert_allclose(np.vstack((s[i], t[i])), shortest_arc_tangents(n[i]), rtol=0, atol=tol)
        np.testing.assert_allclose(np.array(tangent_frame(n[i])), np.vstack((s[i], t[i])), rtol=0, atol=tol)
    np.testing.assert_allclose(np.vstack((s[0], t[0])), [[1, 0, 0], [0, -1, 0]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.vstack((s[1], t[1])), [[1, 0, 0], [0, 1, 0]], rtol=0, atol=1e-15)


def test_contact_set_round_trip_and_typed_errors():
    contacts = [Contact("LF_FOOT", None, [0.1, 0.2, 0.0], [0, 0, 2.0], 0.5, -1e-4),
                Contact("RF_FOOT", None, [0.1, -0.2, 0.0], [0, 0.1, 1.0], np.inf)]
    cs = ContactSet([c.body_a for c in contacts], [None, None], [c.point for c in contacts],
                    [[0, 0, 2.0], [0, 0.1, 1.0]], [0.5, np.inf], [-1e-4, 0.0])
    for a, b in zip(cs.contacts(), contacts):
        assert (a.body_a, a.body_b, a.mu, a.phi) == (b.body_a, b.body_b, b.mu, b.phi)
        np.testing.assert_allclose(a.frame(), b.frame(), atol=1e-15)
    with pytest.raises(ShapeError):
        ContactSet(["a"], [None], np.zeros((2, 3)), np.ones((1, 3)), 1.0)
    with pytest.raises(NonFiniteError):
        ContactSet(["a"], [None], [[0, np.nan, 0]], [[0, 0, 1]], 1.0)
    with pytest.raises(InvalidInputError):
        ContactSet(["a"], [None], [[0, 0, 0]], [[0, 0, 0]], 1.0)
    with pytest.raises(InvalidInputError):
        ContactSet(["a"], [None], [[0, 0, 0]], [[0, 0, 1]], [-1.0])
    with pytest.raises(InvalidInputError):
        ContactSet(["a"], ["a"], [[0, 0, 0]], [[0, 0, 1]], 1.0)


#: unit normals and tangents of the two framing paths and of the normal's definition: measured at
#: most 2.2e-16 apart on these rows (normals scaled by 1e-3 ... 1e3), asserted 1e-14
FRAME = 1e-14


def _rows_batch(names, bodies_b, rows, mu):
    rows = np.asarray(rows, dtype=float).reshape(-1, 7)
    return contact_batch(names, rows[:, :3], rows[:, 3:6], mu, rows[:, 6], bodies_b)


def test_batch_equals_contacts_built_one_by_one_field_by_field():
    """Contact.batch gives what Contact(...) gives for each row: the same bodies, mu and gap,
    the same point (copied, not computed), unit normal, tangents and frame to round-off (the two
    normalisations differ in the last bit at most: 2.2e-16 measured, FRAME asserted); the
    batch's arrays are its own (the inputs changed afterwards change nothing)."""
    rng = np.random.default_rng(7)
    for m in range(7):
        points = rng.normal(size=(m, 3))
        normals = rng.normal(size=(m, 3)) * rng.uniform(1e-3, 1e3, (m, 1))
        normals[:m // 3] = (0.0, 0.0, -2.0)                          # the shortest arc's special case
        mu = rng.uniform(0, 2, m)
        mu[:m // 2] = np.inf
        gaps = rng.normal(scale=1e-3, size=m)
        names = [f"foot{i}" for i in range(m)]
        others = [None if i % 2 else f"box{i}" for i in range(m)]
        for body_b in (None, others):
            got = Contact.batch(names, points, normals, mu, gaps, body_b)
            assert isinstance(got, list) and len(got) == m
            for i, a in enumerate(got):
                b = Contact(names[i], None if body_b is None else body_b[i], points[i], normals[i], mu[i], gaps[i])
                assert type(a) is Contact
                assert (a.body_a, a.body_b, a.mu, a.phi) == (b.body_a, b.body_b, b.mu, b.phi)
                assert type(a.mu) is float and type(a.phi) is float
                np.testing.assert_array_equal(a.point, b.point)
                np.testing.assert_allclose(a.normal, b.normal, rtol=0, atol=FRAME)
                for sa, sb in zip(a.tangents, b.tangents):
                    np.testing.assert_allclose(sa, sb, rtol=0, atol=FRAME)
                np.testing.assert_allclose(a.frame(), b.frame(), rtol=0, atol=FRAME)
                assert not a.point.flags.writeable and not a.frame().flags.writeable
            kept = [c.point.copy() for c in got]
            points_before = points.copy()
            points += 1.0
            for c, p in zip(got, kept):
                np.testing.assert_array_equal(c.point, p)
            points = points_before
    # scalars for mu and gaps; gaps default to touching
    got = Contact.batch(["a", "b"], [[0, 0, 0], [1, 0, 0]], [[0, 0, 1], [0, 0, 3]], 0.5)
    assert [(c.mu, c.phi) for c in got] == [(0.5, 0.0), (0.5, 0.0)]
    got = Contact.batch(["a", "b"], [[0, 0, 0], [1, 0, 0]], [[0, 0, 1], [0, 0, 3]], [0.5, 1.0], -1e-3)
    assert [(c.mu, c.phi) for c in got] == [(0.5, -1e-3), (1.0, -1e-3)]
    assert Contact.batch([], np.zeros((0, 3)), np.zeros((0, 3)), 1.0) == []


def test_batch_contacts_drive_the_contact_matrices_as_single_ones():
    """What the controllers read of a contact list (contact_inputs: bodies, frames, points, gaps,
    friction) is the same for a batch and for contacts built one by one."""
    m = robots.quadruped("links").model
    feet = robots.quadruped("links").foot_frames
    rng = np.random.default_rng(1)
    points, normals = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    batch = Contact.batch(feet, points, normals, [0.5, 1.0, np.inf, 0.2], [0.0, -1e-4, 1e-3, 0.0])
    single = [Contact(f, None, p, n, mu, g) for f, p, n, mu, g in
              zip(feet, points, normals, [0.5, 1.0, np.inf, 0.2], [0.0, -1e-4, 1e-3, 0.0])]
    for x, y in zip(contact_inputs(m, batch), contact_inputs(m, single)):
        np.testing.assert_allclose(x, y, rtol=0, atol=FRAME)


@pytest.mark.parametrize("where, bad, error", [
    ("points", np.nan, NonFiniteError), ("points", np.inf, NonFiniteError), ("normals", -np.inf, NonFiniteError),
    ("gaps", np.nan, NonFiniteError), ("normals", "zero", InvalidInputError), ("mu", -1.0, InvalidInputError),
    ("mu", np.nan, InvalidInputError)])
def test_batch_rejects_a_bad_row_naming_it(where, bad, error):
    rng = np.random.default_rng(0)
    arrays = {"points": rng.normal(size=(4, 3)), "normals": rng.normal(size=(4, 3)), "mu": np.ones(4),
              "gaps": np.zeros(4)}
    if where in ("points", "normals"):
        arrays[where][2] = 0.0 if bad == "zero" else (0.0, bad, 1.0)
    else:
        arrays[where][2] = bad
    with pytest.raises(error, match=r"contact row 2 \(body 'c'\)"):
        Contact.batch(["a", "b", "c", "d"], arrays["points"], arrays["normals"], arrays["mu"], arrays["gaps"])


def test_batch_rejects_inputs_of_the_wrong_form():
    p, n = np.zeros((2, 3)), np.tile([0.0, 0.0, 1.0], (2, 1))
    for args in ((p[:1], n, 1.0), (p, n[:, :2], 1.0), (p, n, [1.0, 1.0, 1.0]), (p, n, 1.0, [0.0])):
        with pytest.raises(ShapeError):
            Contact.batch(["a", "b"], *args)
    with pytest.raises(ShapeError):
        Contact.batch(["a", "b"], p, n, 1.0, None, [None])
    for args in ((p, n, "high"), ([["x", 0, 0], [0, 0, 0]], n, 1.0), (p, n, None), (p, n, 1.0, "0")):
        with pytest.raises(InvalidInputError):
            Contact.batch(["a", "b"], *args)
    with pytest.raises(InvalidInputError, match="contact row 1"):
        Contact.batch(["a", "b"], p, n, 1.0, None, [None, "b"])


def test_rows_batch_equals_the_validated_contact_set():
    """The testbeds' form (rows [point, normal, gap] split into views) gives ContactSet's contacts."""
    rng = np.random.default_rng(3)
    for m in range(6):
        rows = np.column_stack((rng.normal(size=(m, 3)), rng.normal(size=(m, 3)) * rng.uniform(1e-3, 1e3, (m, 1)),
                                rng.normal(scale=1e-3, size=m)))
        rows[:m // 2, 3:6] = (0.0, 0.0, -2.0)                       # the shortest arc's special case
        mu = rng.uniform(0, 2, m)
        names = [f"foot{i}" for i in range(m)]
        got, points, frames = _rows_batch(names, [None] * m, rows, mu)
        want = ContactSet(names, [None] * m, rows[:, :3], rows[:, 3:6], mu, rows[:, 6]).contacts()
        assert not points.flags.writeable and not frames.flags.writeable and frames.shape == (m, 3, 3)
        for i, (a, b) in enumerate(zip(got, want)):
            assert (a.body_a, a.body_b, a.mu, a.phi) == (b.body_a, b.body_b, b.mu, b.phi)
            np.testing.assert_array_equal(a.point, rows[i, :3])               # copied, not computed
            np.testing.assert_allclose(a.normal, rows[i, 3:6] / np.linalg.norm(rows[i, 3:6]), rtol=0, atol=FRAME)
            np.testing.assert_allclose(a.frame(), b.frame(), rtol=0, atol=FRAME)
            np.testing.assert_allclose(a.frame(), np.vstack((a.normal,) + tuple(a.tangents)), rtol=0, atol=0)
            assert a.frame() is not None and np.shares_memory(a.frame(), frames) and np.shares_memory(a.point, points)


def test_stacked_contacts_make_normal_and_tangents_from_their_frame_on_first_use():
    """Contacts from stacks (ContactSet.contacts, Contact.batch) set their normal and tangents
    when first read, as read-only views of their frame's rows; equality, copies, pickling and
    with_friction see them; any other missing attribute is an AttributeError."""
    import copy
    import pickle
    rows = np.array([[0.1, 0.2, 0.0, 0.0, 0.3, 1.0, -1e-4], [0.1, -0.2, 0.0, 0.0, 0.0, -1.0, 0.0]])
    got, _, frames = _rows_batch(["LF", "RF"], [None, None], rows, [0.5, np.inf])
    a = got[0]
    assert "normal" not in vars(a) and "tangents" not in vars(a)
    b = a.with_friction(0.5)
    assert a.normal.base is not None and np.shares_memory(a.normal, frames) and not a.normal.flags.writeable
    np.testing.assert_array_equal(a.normal, frames[0, 0])
    s, t = a.tangents
    np.testing.assert_array_equal(s, frames[0, 1])
    np.testing.assert_array_equal(t, frames[0, 2])
    assert vars(a)["normal"] is a.normal
    built = Contact("LF", None, rows[0, :3], rows[0, 3:6], 0.5, -1e-4)
    np.testing.assert_allclose(built.frame(), a.frame(), rtol=0, atol=FRAME)
    np.testing.assert_array_equal(b.normal, a.normal)
    for c in (copy.copy(got[1]), copy.deepcopy(got[1]), pickle.loads(pickle.dumps(got[1]))):
        np.testing.assert_array_equal(c.normal, frames[1, 0])
        np.testing.assert_array_equal(np.array(c.tangents), frames[1, 1:])
    assert not hasattr(a, "no_such_field")
    with pytest.raises(AttributeError):
        a.no_such_field


def test_contact_set_frames_are_read_only_and_with_friction_changes_only_mu():
    cs = ContactSet(["LF_FOOT", "RF_FOOT"], [None, None], [[0.1, 0.2, 0.0], [0.1, -0.2, 0.0]],
                    [[0, 0, 1.0], [0, 0.1, 1.0]], [100.0, 0.2], [0.0, -1e-4])
    contacts = cs.contacts()
    for c in contacts:
        assert not c.frame().flags.writeable
        np.testing.assert_array_equal(c.frame(), np.vstack((c.normal,) + c.tangents))
    capped = contacts[0].with_friction(0.3)
    assert capped.mu == 0.3 and contacts[0].mu == 100.0
    assert (capped.body_a, capped.body_b, capped.phi) == (contacts[0].body_a, None, 0.0)
    assert capped.frame() is contacts[0].frame() and capped.point is contacts[0].point
    for bad in (-1.0, np.nan):
        with pytest.raises(InvalidInputError):
            contacts[0].with_friction(bad)


def test_vectorized_detection_matches_per_probe_features():
    """World.detect against the one-pair geometry functions on three terrain kinds at once."""
    from idyn.robots import sim as sim_testbeds
    tb = sim_testbeds.QuadrupedTestbed("links", "rigid", 0.5)
    world = tb.sim.world
    rng = np.random.default_rng(3)
    hm = Heightmap.centred(0.01 * rng.normal(size=(11, 11)), 2.0, rng.uniform(0.1, 1.5, (10, 10)))
    terrain = (Plane(mu=0.5), hm, StaticBox([0.05, 0.05, 0.2], translation=[0.1, 0.0, -0.1], mu=0.7))
    world.terrain = terrain
    world.margin = 1.0                               # keep every pair to compare all of them
    q = tb.state().q
    cs = world.detect(q)
    expected = []
    for shape in world.shapes:
        M = tb.model.frame_placement(q, shape.frame)
        if hasattr(shape, "radius"):
            probes, r = [M.act(shape.offset)], shape.radius
        else:
            R = M.rotation @ shape.rotation
            probes = [M.act(shape.offset) + R @ (c * shape.half_extents) for c in
                      np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], float)]
            r = 0.0
        for p in probes:
            expected.append((shape.frame, sphere_plane(p, r, terrain[0]), 0.5))
            f = sphere_heightmap(p, r, hm)
            expected.append((shape.frame, f, hm.friction_at(f.point)))
            expected.append((shape.frame, sphere_box(p, r, terrain[2].rotation, terrain[2].translation,
                                                     terrain[2].half_extents), 0.7))
    assert cs.m == len(expected)
    for i, (frame, f, mu) in enumerate(expected):
        assert cs.body_a[i] == frame and cs.body_b[i] is None and cs.mu[i] == mu
        np.testing.assert_allclose(cs.points[i], f.point, atol=ROUND)
        np.testing.assert_allclose(cs.normals[i], f.normal, atol=ROUND)
        assert cs.phi[i] == pytest.approx(f.phi, abs=ROUND)


@pytest.mark.parametrize("name,mu", [("ap-lcp", 0.5), ("ap-lcp", np.inf), ("qp", 0.5), ("penalty", 0.5)])
def test_simulator_step_equals_the_straightforward_step(name, mu):
    """A trotting-pose LINKS step: the one-pass problem (M, h, J from the workspace) equals the one
    built from mass_matrix, bias_forces and per-contact frame Jacobians, and so does the step."""
    from idyn.robots import sim as sim_testbeds
    tb = sim_testbeds.QuadrupedTestbed("links", "compliant" if name == "penalty" else "rigid", mu,
                                       contact_model=name)
    sim, m = tb.sim, tb.model
    rng = np.random.default_rng(4)
    tau = rng.normal(scale=0.5, size=m.na)
    for _ in range(20):
        tb.apply(tau)
        tb.step()
    q, v = sim.q.copy(), sim.v.copy()
    contacts = sim.contacts()
    assert contacts
    f = -m.bias_forces(q, v)
    f[m.actuated_v] += tau
    ref = ContactProblem(m.mass_matrix(q), v, f, sim.dt, reference_rows(m, q, contacts),
                         np.array([c.phi for c in contacts]), np.array([c.mu for c in contacts]))
    fast = sim.problem(tau)
    for key in ("M", "f", "J", "W", "u_free", "v_free"):
        np.testing.assert_allclose(getattr(fast, key), getattr(ref, key), rtol=1e-12, atol=1e-12, err_msg=key)
    sim.contact_model.reset()
    expected = sim.contact_model.solve(ref)
    sim.contact_model.reset()
    result = sim.step(tau)
    np.testing.assert_allclose(result.forces, expected.impulses / sim.dt, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(sim.v, ref.velocity(expected.impulses), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["qp-coulomb", "lcp-coulomb"])
def test_controllers_take_a_batch_as_the_contacts_built_one_by_one(name):
    """compute(state, desired, contacts) with Contact.batch's list: the torques and forces of the
    same contacts built one by one, to the solvers' round-off (1e-9 relative asserted)."""
    from idyn import controllers
    from idyn.state import Desired, RobotState
    quad = robots.quadruped("a1")
    m = quad.model
    feet = list(quad.feet.values())
    points = quad.foot_centres(quad.q_stand) - [[0.0, 0.0, f.radius] for f in feet]
    normals = np.tile([0.0, 0.0, 1.0], (4, 1))
    batch = Contact.batch([f.link for f in feet], points, normals, 0.5)
    single = [Contact(f.link, None, p, n, 0.5) for f, p, n in zip(feet, points, normals)]
    state = RobotState(quad.q_stand, np.zeros(m.nv), 0.0)
    desired = Desired(m.joint_positions(quad.q_stand), np.zeros(m.na), np.zeros(m.na))
    a = controllers.make(name, m).compute(state, desired, batch)
    b = controllers.make(name, m).compute(state, desired, single)
    scale = np.abs(b.tau).max()
    np.testing.assert_allclose(a.tau, b.tau, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(a.contact_forces, b.contact_forces, rtol=0, atol=1e-9 * m.total_mass * 9.81)


def test_a_contact_owns_its_point():
    """Contact(point=p) copies p and makes it read-only: rewriting the caller's buffer later
    (a reused array, a NaN) does not move or corrupt a contact already built."""
    p = np.array([0.1, 0.2, 0.0])
    c = Contact("a", None, p, [0.0, 0.0, 1.0], 1.0)
    p[:] = np.nan
    assert np.array_equal(c.point, [0.1, 0.2, 0.0])
    with pytest.raises(ValueError):
        c.point[0] = 1.0
    with pytest.raises(ValueError):
        c.normal[0] = 1.0
