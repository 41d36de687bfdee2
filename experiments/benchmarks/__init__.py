"""Benchmark suites behind ``idyn bench``: each module runs one suite and writes JSON."""
