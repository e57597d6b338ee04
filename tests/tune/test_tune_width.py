"""vlpc tune's search gives the same result whatever its width (a local pool of 1 or 2 processes, a
Ray cluster of any size) and however often it is interrupted and resumed: the search decides one
candidate at a time in the plan model's order on the results before it, so a wide batch that models
candidates past the stop changes nothing but the database.  The timing model is replaced by a fixed
function of the candidate (no emulator run), so the grid of widths, budgets and resumes is fast."""

from __future__ import annotations

import hashlib

import pytest

from vlpc import tune

M, N, K = 256, 256, 8192
SHAPE = (M, N, K, "f32", "f32", 0)


def fake_us(cand) -> float:
    """A modeled time that disagrees with the plan model's order by up to +-40 % per candidate (so
    the pruning rule has work to do), and is deterministic."""
    if tune.is_auto(cand):
        return 300.0
    h = int(hashlib.sha256(tune.candidate_key(cand).encode()).hexdigest()[:8], 16) / 2 ** 32
    return 100.0 + 400.0 * h


def fake_evaluate(problem, cand, target, board, clock_mhz, cus, check, model):
    return tune.Result(cand, modeled_us=fake_us(cand), verified=True if check else None)


class FakeRunner:
    """Runs the items in this process, in batches as wide as asked; ``stop_after``: items run before a
    stop (a budget or Ctrl-C), then nothing more."""

    def __init__(self, width: int, stop_after: int | None = None):
        self.width, self.stop_after, self.ran, self.stopped = width, stop_after, 0, None

    def map(self, fn, items, callback) -> bool:
        for i, args in enumerate(items):
            if self.stop_after is not None and self.ran >= self.stop_after:
                self.stopped = "interrupted"
                return False
            self.ran += 1
            callback(i, fn(*args))
        return True


class FakeDB:
    def __init__(self):
        self.saved: dict[str, dict] = {}

    def measured(self, key):
        return dict(self.saved)

    def save_measured(self, key, items):
        self.saved.update(items)

    def record(self, *args):
        return 1


def run(width: int, max_modeled: int | None, db=None, stop_after: int | None = None, check: bool = False):
    runner = FakeRunner(width, stop_after)
    p = tune.Problem("", "g.mlir", None, None, None)
    out = tune.search(p, tune.search_space(M, N, K), runner, target="gfx906", board="mi60", clock_mhz=None,
                      cus=64, shape=SHAPE, max_modeled=max_modeled, check=check, db=db, key="k" if db else None)
    return out


def summary(out):
    return (sorted(tune.candidate_key(r.candidate) for r in out.results),
            tune.candidate_key(out.winner.candidate) if out.winner else None, out.pruned)


@pytest.fixture(autouse=True)
def no_emulator(monkeypatch):
    monkeypatch.setattr(tune, "_evaluate8", fake_evaluate)


@pytest.mark.parametrize("max_modeled", [None, 2, 5, 12])
def test_every_width_gives_the_sequential_result(max_modeled):
    one = summary(run(1, max_modeled))
    assert one[1] is not None
    for width in (2, 3, 8, 32):
        assert summary(run(width, max_modeled)) == one, width


@pytest.mark.parametrize("width", [1, 8])
def test_a_search_interrupted_and_resumed_gives_the_uninterrupted_result(width):
    whole = summary(run(width, 6))
    db = FakeDB()
    interrupted = 0
    for _ in range(50):  # runs interrupted after one new candidate each, each resuming the last
        out = run(width, 6, db=db, stop_after=1)
        if out.stopped is None:
            break
        interrupted += 1
    assert interrupted >= 2
    out = run(width, 6, db=db)
    assert out.stopped is None and summary(out) == whole
    assert out.resumed > 0


def test_results_modeled_past_the_stop_stay_out_of_the_result():
    """A wide batch models candidates past the plan model's bound; the database keeps them, the
    ranked results do not see them (they are the sequential search's)."""
    db = FakeDB()
    out = run(32, None, db=db)
    assert out.pruned.startswith("the plan model's bound")
    assert len(db.saved) > len(out.results)
    assert summary(out) == summary(run(1, None))
