"""vlpc.compile / vlpc.run on the seed's tile, for tests of mechanics whose grids and workgroup
sizes assume it (split-K, small-M companions).  The automatic tile choice has its own tests
(test_split_k.py's auto tests, test_plan_model.py)."""

import vlpc


def seed_tile(fn):
    """``fn`` on the seed's 64x256 tile (32x256 for f64) unless a tile is given."""
    def call(text, *a, **kw):
        if "macro_tile" not in kw and "micro_tile" not in kw:
            rows = 32 if "xf64" in str(text) else 64
            kw.update(macro_tile=(rows, 256), micro_tile=(rows, 1))
        return fn(text, *a, **kw)
    return call


compile_ = seed_tile(vlpc.compile)
run_ = seed_tile(vlpc.run)
