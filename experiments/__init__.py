"""Experiments of both papers, benchmarks and the ``idyn`` command line (:mod:`idyn.experiments.cli`)."""
