"""Experiments as data: one :class:`Scenario` per run, and the paper's sweeps (Sec. 7, docs/experiments.md).

A scenario names everything a run depends on (robot, terrain, friction, controller, duration,
seed, physics backend), so a run is reproducible from its scenario alone and a sweep is a list
of scenarios that a process pool or a Ray cluster can execute in any order.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from idyn.errors import InvalidInputError

#: The paper's controllers (docs/experiments.md), in the order of its tables.
PAPER_CONTROLLERS = ("qp-coulomb", "qp-noslip", "lcp-coulomb", "lcp-noslip", "pid", "sensed-1", "sensed-2")

#: Named terrains: the four planar cases of paper Sec. 7.5 and the rough heightmap.
TERRAINS = {
    "rigid-low": ("rigid", 0.1),
    "rigid-high": ("rigid", math.inf),
    "compliant-low": ("compliant", 0.1),
    "compliant-high": ("compliant", math.inf),
    "rough": ("rough", math.nan),          # per-cell mu ~ U(0.1, 1.5)
}

ROBOTS = ("quadruped", "manipulator")

#: The largest Coulomb coefficient the locomotion runs tell the controllers (a friction safety
#: factor; why: :class:`idyn.experiments.references.QuadrupedReference`, ``friction_limit``),
#: the one default of QuadrupedReference, Scenario and the commands' ``--friction-limit``.
LOCOMOTION_FRICTION_LIMIT = 0.3


#: ``friction_limit`` of a scenario that takes its preset's (0.3 under "idyn", None under "paper")
PRESET_VALUE = "preset"


def check_friction_limit(value: float | None) -> float | None:
    """``value`` if it is None or a finite coefficient >= 0; InvalidInputError otherwise."""
    if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                  and math.isfinite(value) and value >= 0):
        raise InvalidInputError(f"friction_limit must be finite and >= 0 (or None), got {value}")
    return value
BACKENDS = ("pybullet", "idyn", "mujoco")


@dataclass(frozen=True)
class Scenario:
    """Everything one closed-loop run depends on."""

    controller: str = "qp-coulomb"
    robot: str = "quadruped"
    terrain: str = "rigid"        #: rigid | compliant | rough (manipulator: ignored)
    mu: float = math.inf          #: ground friction (quadruped) or fingertip-box friction (manipulator)
    duration: float = 30.0
    seed: int = 0
    backend: str = "pybullet"
    dt: float = 1e-3
    quadruped: str = "links"      #: which quadruped model (robots.QUADRUPEDS)
    torque_limits: bool = False   #: the paper's runs used unlimited torque
    contact_model: str | None = None  #: idyn backend only: ap-lcp, noslip, qp, compliant, penalty
    #: quadruped: the controllers plan with min(terrain mu, this); None: the terrain's mu (the
    #: paper's literal setting); "preset": the preset's (:attr:`planning_friction_limit`)
    friction_limit: float | None | str = PRESET_VALUE
    #: keyword options of ``controllers.make`` (e.g. ``{"stage2": False}``: Stage I alone, Fig. 15)
    controller_options: dict = field(default_factory=dict)
    #: keyword options of idyn.sim's ``contact_model`` (``idyn.sim.make``; e.g. ``{"gap_rate": True}``
    #: for the ``qp`` model): needs ``contact_model`` named, a rigid one (the compliant terrain sets
    #: the penalty model's stiffness and damping)
    contact_model_options: dict = field(default_factory=dict)
    #: "idyn" (idyn's defaults) or "paper" (the published models, :mod:`idyn.experiments.presets`);
    #: options given in ``controller_options``, ``reference_options`` or ``friction_limit``
    #: override the preset's
    preset: str = "idyn"
    #: quadruped: keyword options of :class:`idyn.experiments.references.QuadrupedReference`
    #: (e.g. ``{"balance_target": "acceleration"}``; the friction limit is ``friction_limit``)
    reference_options: dict = field(default_factory=dict)

    def __post_init__(self):
        from .presets import check_preset
        check_preset(self.preset)
        if self.robot not in ROBOTS:
            raise InvalidInputError(f"unknown robot {self.robot!r}; choose from {ROBOTS}")
        if self.backend not in BACKENDS:
            raise InvalidInputError(f"unknown backend {self.backend!r}; choose from {BACKENDS}")
        if self.terrain not in ("rigid", "compliant", "rough"):
            raise InvalidInputError(f"unknown terrain {self.terrain!r}; choose rigid, compliant or rough")
        if not (self.duration > 0 and math.isfinite(self.duration)):
            raise InvalidInputError(f"duration must be positive, got {self.duration}")
        if not (0 < self.dt <= 0.01):
            raise InvalidInputError(f"dt must be in (0, 0.01] s, got {self.dt}")
        if self.contact_model is not None and self.backend != "idyn":
            raise InvalidInputError("contact_model chooses idyn.sim's contact model; it needs backend='idyn'")
        if "friction_limit" in self.reference_options:
            raise InvalidInputError("the friction limit is Scenario.friction_limit, not a reference option")
        if not (math.isnan(self.mu) or self.mu >= 0):
            raise InvalidInputError(f"mu must be >= 0 (or inf), got {self.mu}")
        if self.friction_limit != PRESET_VALUE:
            check_friction_limit(self.friction_limit)
        for name in ("controller_options", "contact_model_options", "reference_options"):
            options = getattr(self, name)
            if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
                raise InvalidInputError(f"{name} must be a dict of keyword options, got {options!r}")
        if self.contact_model_options and self.contact_model in (None, "penalty"):
            raise InvalidInputError("contact_model_options configure a named rigid idyn.sim contact model "
                                    f"(ap-lcp, noslip, qp, compliant), not {self.contact_model!r}")

    @property
    def planning_friction_limit(self) -> float | None:
        """The friction limit the controllers plan with: ``friction_limit``, or the preset's
        (:data:`LOCOMOTION_FRICTION_LIMIT` under "idyn", the terrain's mu under "paper")."""
        if self.friction_limit != PRESET_VALUE:
            return self.friction_limit
        from .presets import reference_options
        return reference_options(self.preset).get("friction_limit", LOCOMOTION_FRICTION_LIMIT)

    @property
    def terrain_label(self) -> str:
        """The paper's name of this terrain (rigid-low, ..., rough) or terrain/mu; for the
        manipulator, whose terrain is ignored, grasp/mu (the fingertip-box friction)."""
        if self.robot != "quadruped":
            return f"grasp/mu={self.mu:g}"
        for name, (terrain, mu) in TERRAINS.items():
            if terrain == self.terrain and (terrain == "rough" or mu == self.mu or
                                            (math.isinf(mu) and self.mu >= 100)):
                return name
        return f"{self.terrain}/mu={self.mu:g}"

    def to_dict(self) -> dict:
        return asdict(self)


def terrain_scenario(label: str, **kw) -> Scenario:
    """A quadruped scenario on a named terrain (see :data:`TERRAINS`)."""
    if label not in TERRAINS:
        raise InvalidInputError(f"unknown terrain {label!r}; choose from {sorted(TERRAINS)}")
    terrain, mu = TERRAINS[label]
    return Scenario(robot="quadruped", terrain=terrain, mu=mu, **kw)


def paper_sweep(controllers=PAPER_CONTROLLERS, terrains=tuple(TERRAINS), *, duration=30.0,
                seed=0, backend=None, friction_limit=PRESET_VALUE, preset="idyn") -> list[Scenario]:
    """Controllers x terrains, the grid behind the paper's Tables 3-5. ``backend`` None: the
    preset's (:func:`idyn.experiments.presets.default_backend`: idyn.sim under "paper")."""
    from .presets import default_backend
    backend = default_backend(preset) if backend is None else backend
    return [terrain_scenario(t, controller=c, duration=duration, seed=seed, backend=backend,
                             friction_limit=friction_limit, preset=preset)
            for t in terrains for c in controllers]


def manipulator_sweep(controllers=("qp-coulomb", "pid", "sensed-1"), mus=(100.0, 1.0), *,
                      duration=3.0, seed=0, backend=None, preset="idyn") -> list[Scenario]:
    """The grasping experiment of paper Sec. 8.4.1 (Fig. 18); ``backend`` as for :func:`paper_sweep`."""
    from .presets import default_backend
    backend = default_backend(preset) if backend is None else backend
    return [Scenario(controller=c, robot="manipulator", mu=mu, duration=duration, seed=seed,
                     backend=backend, preset=preset) for mu in mus for c in controllers]
