"""Where the planner holds a stance foot: a late foot, found by probing downward, is held at the
height where it touched, not at the depth searched (issue 5: held below the ground, footholds
ratcheted down from step to step and LINKS rolled over on rigid ground), and its foothold moves
there continuously (a jump of the desired foot is a jump of every controller's feedback)."""
import numpy as np
import pinocchio as pin

from idyn import robots
from idyn.state import RobotState
from idyn.planners import BaseCommand, QuadrupedPlanner


def test_late_foot_is_held_where_it_touched():
    robot = robots.quadruped("links")
    m = robot.model
    feet = {leg: f.link for leg, f in robot.feet.items()}
    planner = QuadrupedPlanner(m, feet, robot.leg_joints, robot.q_stand,
                               foot_offsets={leg: f.offset for leg, f in robot.feet.items()})
    legs = planner.legs
    q, v, dt = robot.q_stand.copy(), np.zeros(m.nv), 1e-3
    k, swung = 0, None
    # trot in place on a kinematic robot (the joints take the desired angles) until a foot that
    # swung reaches its planned touchdown; every foot reports contact exactly when in stance
    while True:
        before = planner.stance if k else dict.fromkeys(legs, True)
        d = planner.plan(RobotState(q, v, k * dt), BaseCommand(), [before[leg] for leg in legs])
        now = planner.stance
        swung = swung or next((leg for leg in legs if not now[leg]), None)
        k += 1
        if swung and now[swung] and not before[swung]:
            break
        q = q.copy()
        q[m.actuated_q] = d.q
    i = legs.index(swung)
    touched = pin.SE3(m.frame_placement(q, feet[swung])).act(robot.feet[swung].offset)
    # the foot stands at its planned foothold but reports no contact for 5 ms (tracking lag):
    # the planner searches downward, then the foot reports contact where it stands
    targets = []
    for late in range(12):
        flags = [leg != swung or late >= 5 for leg in legs]
        planner.plan(RobotState(q, v, (k + late) * dt), BaseCommand(), flags)
        targets.append(planner.foot_targets[i].copy())
    targets = np.array(targets)
    assert targets[4, 2] < touched[2] - 4e-4                      # searched 0.5 mm down
    steps = np.abs(np.diff(targets[:, 2]))
    assert steps.max() <= planner.probe_speed * dt + 1e-15          # no jump, either way
    np.testing.assert_allclose(targets[-1], touched, atol=1e-12)    # back at the touched height
