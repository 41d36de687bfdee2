"""``--preset paper|idyn``: the published models and protocol, or idyn's defaults, as data.

One :class:`Difference` per way idyn's defaults differ from the ID paper (Zapolsky & Drumwright,
Sec. 4-8): what, where the paper says it, idyn's value, the paper's, the keyword option that
restores the paper and why idyn differs. ``preset="paper"`` applies every restorable one:
:func:`controller_options` (options of ``controllers.make``), :func:`reference_options` (options
of :class:`idyn.experiments.references.QuadrupedReference`) and :func:`default_backend` (the
paper's world: idyn.sim, an Anitescu-Potra LCP on rigid ground and a penalty model on compliant
ground, the models the authors ran in Moby). ``preset="idyn"`` applies none. Options a user
gives explicitly override the preset's (:func:`idyn.experiments.runner.run_scenario`).
The table with the measured effect of each difference: docs/paper_differences.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from idyn.errors import InvalidInputError

from .reproduce import PRESETS

#: the controllers whose joint error feedback is the shared configuration-space PID added to the
#: desired acceleration (paper Sec. 7.3); ``pid`` is the feedback alone, with its own torque gains
FEEDBACK_CONTROLLERS = ("lcp-noslip", "lcp-coulomb", "qp-coulomb", "qp-noslip", "qp-coulomb-1stage",
                        "sensed-1", "sensed-2")
#: every controller the runner makes (controllers.available())
ALL_CONTROLLERS = FEEDBACK_CONTROLLERS + ("pid",)
#: the two-stage QP controllers of Sec. 6 (Stage I; Stage II where ``stage2``)
QP_CONTROLLERS = ("qp-coulomb", "qp-noslip", "qp-coulomb-1stage")
#: the backend of each preset when none is named: the paper's world, or the default cross-check
BACKENDS = {"paper": "idyn", "idyn": "pybullet"}


@dataclass(frozen=True)
class Difference:
    """One way idyn's defaults differ from the paper."""

    what: str                   #: the model or protocol element
    where: str                  #: paper section / equation
    idyn: str                   #: idyn's default
    paper: str                  #: the paper's
    option: str                 #: the option that restores the paper ("" when none does)
    why: str                    #: why idyn differs (the measurement behind it: docs)
    target: str = "controller"  #: "controller", "reference", "backend" or "none" (not restorable)
    applies_to: tuple = ()      #: controller names (target "controller")
    options: dict = field(default_factory=dict)   #: the keyword options ``preset="paper"`` applies


DIFFERENCES: tuple[Difference, ...] = (
    Difference("Stage I objective", "Sec. 6.2.2, eqs. 95-98", "contact-work (the impulses' work)",
               "kinetic energy, eq. 98", "objective=kinetic-energy",
               "eq. 98 prices the base's kinetic energy, not the contacts' work; the contact work's "
               "optimality conditions are the frictionless contact LCP (controllers.dissipation)",
               applies_to=QP_CONTROLLERS, options={"objective": "kinetic-energy"}),
    Difference("separation price of touching contacts", "Sec. 6.2 (absent)", "1 robot mass (Coulomb)",
               "0 (no such term)", "separation_weight=0",
               "without it the relaxation predicts sliding loaded feet to lift off (docs/dissipation.md)",
               applies_to=("qp-coulomb", "qp-coulomb-1stage"), options={"separation_weight": 0.0}),
    Difference("Stage II objective", "Sec. 6.2.4, eqs. 105-107", "tau^T tau (the whole torque)",
               "y^T y, y = tau - f_ID (eq. 87)", "stage2_objective=correction",
               "the paper's prose and the authors' code minimise the whole torque; eqs. 105-107 "
               "print the torque beyond the contact-free inverse dynamics",
               applies_to=("qp-coulomb", "qp-noslip"), options={"stage2_objective": "correction"}),
    Difference("error-feedback velocity gain kv", "Sec. 7.3 (gains: authors' Pacer config)",
               "2 sqrt(kp) = 63.2 1/s", "10 1/s (kp 1e3, ki 1 the same)", "kv=10",
               "critical damping: at kv 10 (damping ratio 0.16) the trot's touchdown transients "
               "add up (docs/planner.md)",
               applies_to=FEEDBACK_CONTROLLERS, options={"kv": 10.0}),
    Difference("negative gaps in the non-penetration rows", "Sec. 3.2, eq. 35", "overlap clamped to 0",
               "-phi/dt for positive phi (anticipated contact); overlap not discussed",
               "penetration_recovery=1",
               "a robot resting with a steady overlap is pushed off every step (controllers.dynamics); "
               "not in the preset: the paper does not say eq. 35 applies to overlaps, and on the "
               "compliant ground (1 mm sink) it asks for 1 m/s of separation every step",
               target="none"),
    Difference("touchdown impact", "Sec. 4-6 (absent)", "passive touchdown impulse first",
               "none: prescribed joint velocities absorb the impact", "impact=false",
               "actuators cannot act impulsively (controllers.impact)",
               applies_to=FEEDBACK_CONTROLLERS[:5], options={"impact": False}),
    Difference("exact duplicate contacts", "Sec. 8.4.2 (absent)", "merged, solved once",
               "each solved as a contact", "merge_duplicates=false",
               "duplicates make the LCPs degenerate (controllers.duplicates); lcp-noslip never merges "
               "(Algorithm 2 handles dependent contacts)",
               applies_to=("lcp-coulomb",) + QP_CONTROLLERS, options={"merge_duplicates": False}),
    Difference("Sec. 4.5 consistency check", "Sec. 4.5, eqs. 46-51; Sec. 8.2: \"we do not use the "
               "check described in Section 4.5\"", "on: an answer that closes a contact moves qd_des "
               "minimally and solves again (controllers.consistency)", "off in the experiments",
               "consistency_check=false",
               "with it qp-coulomb holds the grasped box at mu = 100 in idyn.sim (without: dropped at "
               "1.43 s; docs/results.md); on the LINKS trot it never runs",
               applies_to=("lcp-noslip", "qp-noslip") + QP_CONTROLLERS[::2], options={"consistency_check": False}),
    Difference("qp-coulomb: Stage II from the command's effort", "Sec. 6.2.4 (absent)",
               "after a consistency move, Stage II measures torque from the removed command's effort",
               "none", "command_effort=false",
               "the squeeze of a grasp is an internal force Stage I leaves free; the least-torque "
               "squeeze drops the box (docs/results.md)",
               applies_to=("qp-coulomb",), options={"command_effort": False}),
    Difference("qp-noslip: friction of unloaded and held contacts", "Sec. 4, eqs. 40-41; Sec. 6, eq. 101",
               "contacts sliding or ending the step unloaded and opening get no friction; held ones "
               "keep eq. 101 at mu = 100", "every contact held by equalities, tangential impulse "
               "unbounded", "release=false, no_slip_mu=inf",
               "eq. 101's mu -> inf limit gives no friction without normal impulse; read literally, "
               "Stage I gave a lifting foot 16 N of friction at zero load and the next step's "
               "equalities threw the robot (controllers.qp_noslip, docs/results.md)",
               applies_to=("qp-noslip",), options={"release": False, "no_slip_mu": float("inf")}),
    Difference("trot scaled to the robot's size", "Sec. 7.6 (LINKS only)",
               "other robots: step height x s and speed x sqrt(s), s the size relative to LINKS",
               "LINKS's 0.3 s, 0.015 m, 0.2 m/s", "scale_to_size=false (reference option)",
               "a robot three times LINKS's size would trot with 1.5 cm steps (references.QuadrupedReference); "
               "LINKS itself is unchanged", target="reference", options={"scale_to_size": False}),
    Difference("step budget and impulse plausibility bound", "Sec. 8.4.2 (absent)",
               "50 ms budget; impulses bounded by 10x the robot's momentum",
               "unbounded", "budget=none, plausibility_margin=none",
               "a controller must return in time and never command an absurd impulse (docs/safety.md)",
               applies_to=FEEDBACK_CONTROLLERS[:5], options={"budget": None, "plausibility_margin": None}),
    Difference("lcp-noslip: consistent desired motion", "Sec. 4.4-4.5, Algorithm 1, App. E",
               "qd_des projected so dropped tangent rows are implied", "Algorithm 1 as published",
               "consistent_desired=false",
               "App. E assumes zero right-hand sides; ours are -[S; T]_a qd_des (controllers.lcp_noslip)",
               applies_to=("lcp-noslip",), options={"consistent_desired": False}),
    Difference("lcp-noslip: sliding touchdown", "Sec. 4 (absent)",
               "contacts sliding > 1 cm/s keep no no-slip rows that step", "every contact held",
               "slide_speed=inf",
               "holding a sliding foot stops it within one step through the actuators (controllers.lcp_noslip)",
               applies_to=("lcp-noslip",), options={"slide_speed": float("inf")}),
    Difference("lcp-coulomb: warm-started Lemke", "Sec. 5.3 (\"a means for warm starting Lemke's "
               "Algorithm is currently unknown\")", "previous basis tried first", "cold Lemke",
               "warm_start=false", "speed; the answer is an LCP solution either way (controllers.warm_start)",
               applies_to=("lcp-coulomb",), options={"warm_start": False}),
    Difference("planning friction limit", "Sec. 7.5 (the terrain's mu)", "min(terrain mu, 0.3)",
               "the terrain's mu", "friction_limit=none (--friction-limit none)",
               "at high mu the Coulomb controllers' forces jam stance feet; the simulator may return "
               "the lift-off solution (references.QuadrupedReference)",
               target="reference", options={"friction_limit": None}),
    Difference("balance term", "Sec. 7.3", "torque added after the controller",
               "stabilisation accumulated into qdd_des", "balance_target=acceleration",
               "as the authors' Pacer stabilisation plugin's default load path; Sec. 7.3 describes "
               "the acceleration path (references.QuadrupedReference)",
               target="reference", options={"balance_target": "acceleration"}),
    Difference("balance gains", "Sec. 7.3 (none given)",
               "kp (0, 0, 100, 100, 100, 0), kv (0, 0, 10, 10, 10, 0) on (x, y, z, roll, pitch, yaw)",
               "not given; a public Pacer LINKS config (example/models/links-moby/vars.xml) has kp "
               "(0, 0, 0, -1e3, -1e3, 0), kv (0, 0, 0, 1e2, 1e2, 0)",
               "reference option balance={'kp': ..., 'kv': ...}",
               "the paper gives no gains and the public config is of unknown date and sign "
               "convention; not in the preset", target="none"),
    Difference("contacts the controller models", "Sec. 7.4 (\"identical data\" to the simulator's)",
               "touching feet in planned stance", "not stated: the simulator's contacts, or Pacer's "
               "planned-stance selection (its stabilisation's des-contact switch)",
               "reference option contacts=all",
               "modelling every reported contact, the QP controllers keep force on separating swing "
               "feet (docs/design.md); not in the preset, as the paper does not say which",
               target="none"),
    Difference("reference physics", "Sec. 7.4", "PyBullet", "Moby: Anitescu-Potra LCP (rigid), "
               "penalty (compliant)", "--backend idyn",
               "PyBullet is the widely installed cross-check; idyn.sim has the paper's models",
               target="backend"),
    Difference("lcp-coulomb: MINDIFF (Algorithm 3)", "Sec. 5.3, Algorithm 3", "off",
               "not stated for the experiments (exponential time)", "mindiff=true",
               "the experiments do not say it ran; left off in both presets (docs/paper_differences.md)",
               target="none"),
    Difference("lcp-noslip: release of separating contacts", "Sec. 4, eqs. 40-41",
               "tangent rows of unloaded opening contacts released", "every contact in the set held",
               "", "read literally eqs. 40-41 transmit friction through an open gap; no option restores it",
               target="none"),
    Difference("lcp-noslip: Algorithm 1's rows", "Sec. 4.4, Algorithm 1",
               "rows offered in column-pivoted QR order, dependence a sine below 1e-3 in the A^-1 metric",
               "rows in the order S_1, T_1, S_2, ...; dependent when X^T M^-1 X is singular",
               "tangent_dependence_tol (the order: none)",
               "the paper's order can keep a badly conditioned subset, and contacts a few micrometres "
               "off the plane make rows independent by 1e-4, giving huge tangential impulses "
               "(controllers.lcp_noslip); idyn.lcp.find_indices is Algorithm 1 as published",
               target="none"),
    Difference("Stage II ridge", "Sec. 6.2.4, eq. 112", "1e-6 x mean eigenvalue", "none",
               "", "eq. 112's Hessian is singular where impulse combinations give equal torques; "
               "the ridge (> 0 required) picks one answer", target="none"),
)


def check_preset(preset: str) -> str:
    """``preset`` if it names a preset (:data:`idyn.experiments.reproduce.PRESETS`)."""
    if preset not in PRESETS:
        raise InvalidInputError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    return preset


def controller_options(preset: str, controller: str) -> dict:
    """The keyword options of ``controllers.make(controller, ...)`` that ``preset`` sets."""
    if check_preset(preset) == "idyn":
        return {}
    options: dict = {}
    for d in DIFFERENCES:
        if d.target == "controller" and controller in d.applies_to:
            options.update(d.options)
    return options


def reference_options(preset: str) -> dict:
    """The keyword options of :class:`~idyn.experiments.references.QuadrupedReference` that
    ``preset`` sets (``friction_limit`` among them)."""
    if check_preset(preset) == "idyn":
        return {}
    options: dict = {}
    for d in DIFFERENCES:
        if d.target == "reference":
            options.update(d.options)
    return options


def default_backend(preset: str) -> str:
    """The physics of ``preset`` when none is named: idyn.sim (the paper's world) or PyBullet."""
    return BACKENDS[check_preset(preset)]


def restorable() -> tuple[Difference, ...]:
    """The differences ``preset="paper"`` applies (controller and reference options)."""
    return tuple(d for d in DIFFERENCES if d.target in ("controller", "reference"))


def ablation(scenario, difference: Difference) -> tuple:
    """Two scenarios that isolate ``difference`` on ``scenario`` (a :class:`Scenario` whose own
    options are kept): idyn's defaults with only this difference set to the paper's value, and
    the paper preset with only this one set back to idyn's default. The same physics (the
    scenario's backend) for both; the measured effect in docs/paper_differences.md."""
    from dataclasses import replace

    from .scenario import LOCOMOTION_FRICTION_LIMIT

    if difference.target == "controller":
        if scenario.controller not in difference.applies_to:
            raise InvalidInputError(f"{difference.what!r} does not apply to {scenario.controller}")
        defaults = _controller_defaults(scenario.controller, difference.options)
        only = replace(scenario, preset="idyn", controller_options={**scenario.controller_options, **difference.options})
        back = replace(scenario, preset="paper", controller_options={**scenario.controller_options, **defaults})
        return only, back
    if difference.target != "reference":
        raise InvalidInputError(f"{difference.what!r} is not an option of a controller or a reference")
    if "friction_limit" in difference.options:
        only = replace(scenario, preset="idyn", friction_limit=difference.options["friction_limit"])
        back = replace(scenario, preset="paper", friction_limit=LOCOMOTION_FRICTION_LIMIT)
        return only, back
    import inspect

    from .references import QuadrupedReference
    signature = inspect.signature(QuadrupedReference.__init__).parameters
    defaults = {k: signature[k].default for k in difference.options}
    only = replace(scenario, preset="idyn", reference_options={**scenario.reference_options, **difference.options})
    back = replace(scenario, preset="paper", reference_options={**scenario.reference_options, **defaults})
    return only, back


def _controller_defaults(controller: str, options: dict) -> dict:
    """idyn's defaults of ``options`` for ``controller``: the values a controller made without
    them holds (read from a constructed controller, so defaults set in code are covered)."""
    from idyn import controllers, robots

    made = controllers.make(controller, robots.quadruped("links").model)
    values = {}
    for key in options:
        if key in ("kv", "kp", "ki"):
            values[key] = float(getattr(made.feedback, key)[0])
        elif key == "budget":
            values[key] = None if made.budget == float("inf") else made.budget
        elif key == "plausibility_margin":
            values[key] = None if not made._bounded else made.plausibility_margin
        elif key == "impact":
            values[key] = made.dynamics.impact
        elif key == "penetration_recovery":
            values[key] = made.dynamics.penetration_recovery
        elif key == "merge_duplicates":
            values[key] = made.merge_duplicates
        elif hasattr(made, key):
            values[key] = getattr(made, key)
        else:
            raise InvalidInputError(f"no default of {key!r} readable from {controller}")
    return values


def markdown_table() -> str:
    """:data:`DIFFERENCES` as a Markdown table (what, paper, idyn, paper's value, option, why)."""
    rows = ["| what | paper | idyn | paper's value | restores it | why idyn differs |",
            "| --- | --- | --- | --- | --- | --- |"]
    for d in DIFFERENCES:
        rows.append(f"| {d.what} | {d.where} | {d.idyn} | {d.paper} | {('`' + d.option + '`') if d.option else '-'} "
                    f"| {d.why} |")
    return "\n".join(rows)
