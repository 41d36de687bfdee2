"""The per-step record of a closed-loop run, saved as compressed NumPy (``.npz``).

One :class:`Trace` is preallocated for the whole run (no per-step allocation) and holds, per
control step k: time, measured q and v, desired actuated q and v, commanded torque, the summed
normal force predicted by the controller and the one the simulator applied, the number of
contacts, the solver status code and the controller's solve time, the centre of mass. Load a
saved trace with :func:`Trace.load` (or plain ``numpy.load``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Array fields and their per-step shape ("nq", "nv", "na" are filled in from the model).
FIELDS = {
    "t": (), "q": ("nq",), "v": ("nv",), "q_des": ("na",), "v_des": ("na",), "tau": ("na",),
    "pred_normal": (), "sensed_normal": (), "n_contacts": (), "status": (), "solve_time": (),
    "com": (3,),
}


@dataclass
class Trace:
    """Preallocated arrays of a run; ``n`` is the number of steps recorded so far."""

    arrays: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)
    status_names: list[str] = field(default_factory=list)
    n: int = 0

    def __post_init__(self):
        #: the arrays in :data:`FIELDS` order, which :meth:`record` fills
        self._columns = tuple(self.arrays.get(k) for k in FIELDS)

    @classmethod
    def allocate(cls, steps: int, nq: int, nv: int, na: int, meta: dict | None = None) -> "Trace":
        sizes = {"nq": nq, "nv": nv, "na": na}
        arrays = {k: np.full((steps,) + tuple(sizes.get(s, s) for s in shape), np.nan)
                  for k, shape in FIELDS.items()}
        return cls(arrays, dict(meta or {}))

    def status_code(self, name: str) -> int:
        """Small integer for a solver status name (names are kept in ``status_names``)."""
        if name not in self.status_names:
            self.status_names.append(name)
        return self.status_names.index(name)

    def record(self, t, q, v, q_des, v_des, tau, pred_normal, sensed_normal, n_contacts, status, solve_time,
               com) -> None:
        """Store one step: a value for every field of :data:`FIELDS` (in its order, or by name)."""
        k = self.n
        for array, value in zip(self._columns, (t, q, v, q_des, v_des, tau, pred_normal, sensed_normal, n_contacts,
                                                status, solve_time, com)):
            array[k] = value
        self.n = k + 1

    def __getattr__(self, key):
        arrays = self.__dict__.get("arrays", {})
        if key in arrays:
            return arrays[key][: self.__dict__["n"]]
        raise AttributeError(key)

    def save(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {k: a[: self.n] for k, a in self.arrays.items()}
        np.savez_compressed(path, **data, status_names=np.array(self.status_names, dtype=str),
                            meta=np.array(json.dumps(self.meta)))
        return path

    @classmethod
    def load(cls, path) -> "Trace":
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in FIELDS if k in z}
            names = [str(s) for s in z["status_names"]]
            meta = json.loads(str(z["meta"]))   # JSON keeps inf and nan (Infinity, NaN)
        n = arrays["t"].shape[0]
        return cls(arrays, meta, names, n)
