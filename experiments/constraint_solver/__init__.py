"""The five examples of the constraint-solver paper (Drumwright, Secs. 4.4, 5.4, 5.5, 6.4, 6.5).

Each module exposes ``run(short=False, **options) -> dict`` (JSON-serializable results) and
``plot(results, out_dir) -> list[str]`` (PNG paths).
"""
EXAMPLES = ("pendulum", "rom-pendulum", "elastic-foundation", "incline", "sphere-stack")
