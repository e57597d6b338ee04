"""Per-instruction accounting of the CU model (:func:`~.cu.simulate_cu`), for ``vlpc profile``.

Pass an :class:`IssueRecorder` as ``simulate_cu(..., recorder=rec)``, or install it around a
launch's model with ``with recording(rec): model_kernel(...)`` (the CU simulation inside takes
it); without one the model runs as before (the hooks are ``if recorder is not None`` tests).  All figures are *modeled* engine cycles of the simulated
CU (CU 0 of :mod:`.gpu`'s shortcut: its resident workgroups, repeated traces included).

For each issued instruction of a wave the recorder splits the cycles since the wave's previous
issue into:

* **issue**: ``TimingParams.issue_turn_cycles`` (4): the turn in which the instruction issues.
  A wave issues at most one instruction per turn of its SIMD, so a wave that never waits
  spends exactly this per instruction; per wave, issue + stall cycles add up to its lifetime
  (first dispatch to the end of its last turn).
* **stall** cycles, by cause (:data:`STALL_CAUSES`):

  - ``fetch``: the cost the *previous* instruction adds before the wave's next issue: an
    8-byte (long) instruction's ``long_instruction_extra_cycles``, a taken branch's
    ``branch_taken_extra_cycles``, ``s_nop``'s wait states (charged to that instruction);
  - ``vmcnt``, ``lgkmcnt_smem``, ``lgkmcnt_lds``: an ``s_waitcnt`` holding the wave until
    the counter's operations completed (charged to the ``s_waitcnt``; ``lgkmcnt`` is split
    by the kind of operation the wave waited for: a scalar load or an LDS access);
  - ``barrier``: from a wave's arrival at ``s_barrier`` to the release by the workgroup's
    last wave (charged to the ``s_barrier``);
  - ``valu_busy``: the SIMD's VALU still busy with an earlier VALU instruction (an f64 or
    transcendental one occupies it 8 or 16 cycles; the model has no register-dependency
    rule beyond this: a wave64 VALU result is available to the wave's next instruction, the
    4-cycle cadence of GCN, AMD "GCN Architecture" whitepaper);
  - ``port``: ready but not issued: another wave of the SIMD took the instruction category
    in that turn (one VALU, scalar, VMEM, LDS, branch, internal instruction per SIMD turn),
    the TA/LDS pipe was taken, or the wave waited for its SIMD's turn.

Events (for the wave timeline) are kept per issue up to ``max_events``.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

#: Stall causes, in the order the profile prints them.
STALL_CAUSES = ("valu_busy", "vmcnt", "lgkmcnt_smem", "lgkmcnt_lds", "barrier", "port", "fetch")
_WAIT = {"vmem": 1, "smem": 2, "lds": 3}  # the model's counter reasons -> index in STALL_CAUSES
_BARRIER, _PORT, _FETCH, _VALU = 4, 5, 6, 0
#: Columns of a :attr:`IssueRecorder.rows` entry: issues, issue cycles, then STALL_CAUSES.
ROW_FIELDS = ("issues", "issue_cycles") + STALL_CAUSES


@dataclass
class WaveRecord:
    """One simulated wave: ``simd`` (0-3), ``wg`` (index of its workgroup in the CU's order),
    ``key`` (the traced ``(workgroup id, wave in workgroup)`` it replays), ``start``/``end``
    (engine cycles), ``issues`` (instructions issued)."""

    simd: int
    wg: int
    key: tuple
    start: float
    end: float = 0.0
    issues: int = 0


@dataclass
class IssueRecorder:
    """Collects, per PC (byte offset in the code image), ``rows[pc]`` = ``[issues, issue cycles,
    stall cycles per cause...]`` (:data:`ROW_FIELDS`), per wave a :class:`WaveRecord`, and
    ``events``: ``(wave, pc, issue cycle, stall start cycle, cause index or -1, VALU busy cycles)``
    per issue (the stall runs from the stall start to the issue; cause: the largest of its causes;
    VALU busy: cycles the instruction occupies its SIMD's VALU, 0 for other instructions)."""

    max_events: int = 500_000
    rows: dict = field(default_factory=dict)
    waves: list = field(default_factory=list)
    events: list = field(default_factory=list)
    events_dropped: int = 0
    turn: float = 4.0
    _state: list = field(default_factory=list, repr=False)
    _valu_free: list = field(default_factory=lambda: [0.0] * 4, repr=False)

    # -- hooks called by simulate_cu ------------------------------------------------------

    def start(self, w: int, now: float, simd: int, wg: int, key: tuple, turn: float) -> None:
        """Wave ``w`` (the model's index) starts at cycle ``now`` on ``simd``."""
        self.turn = turn
        while len(self.waves) <= w:
            self.waves.append(None)
            self._state.append(None)
        self.waves[w] = WaveRecord(simd, wg, tuple(key), now, now)
        # [earliest next issue, ready after last issue's extras, previous pc, previous was a
        #  barrier, time an s_waitcnt was first tried]
        self._state[w] = [now, now, None, False, None]

    def wait(self, w: int, t: float) -> None:
        """Wave ``w``'s ``s_waitcnt`` was tried at ``t`` and holds it."""
        st = self._state[w]
        if st[4] is None:
            st[4] = t

    def issue(self, w: int, pc: int, cls: str, t: float, ready_at: float, why, nxt: float,
              busy: float) -> None:
        """Wave ``w`` issues the instruction at ``pc`` (emulator class ``cls``) at cycle ``t``;
        ``ready_at``/``why``: when and why the model last set the wave ready; ``nxt``: its
        earliest next issue; ``busy``: VALU cycles the instruction occupies its SIMD."""
        st = self._state[w]
        earliest, after_extra, prev_pc, prev_barrier, tried = st
        rows = self.rows
        turn = self.turn
        stall = t - earliest
        cause = -1
        if stall > 0:
            split = [0.0] * 7
            rest = stall
            fetch = min(max(0.0, after_extra - earliest), rest)
            if fetch > 0 and prev_pc is not None:
                rows[prev_pc][2 + _FETCH] += fetch
                split[_FETCH] = fetch
                rest -= fetch
            if prev_barrier and prev_pc is not None:
                b = min(max(0.0, ready_at - after_extra), rest)
                if b > 0:
                    rows[prev_pc][2 + _BARRIER] += b
                    split[_BARRIER] = b
                    rest -= b
            row = rows.get(pc)
            if row is None:
                row = rows[pc] = [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
            k = _WAIT.get(why)
            if k is not None and tried is not None:
                wt = min(max(0.0, ready_at - tried), rest)
                row[2 + k] += wt
                split[k] = wt
                rest -= wt
            if cls == "valu":
                vb = min(max(0.0, min(t, self._valu_free[self.waves[w].simd]) - (t - rest)), rest)
                if vb > 0:
                    row[2 + _VALU] += vb
                    split[_VALU] = vb
                    rest -= vb
            if rest > 0:
                row[2 + _PORT] += rest
                split[_PORT] = rest
            cause = max(range(7), key=split.__getitem__)
        else:
            row = rows.get(pc)
            if row is None:
                row = rows[pc] = [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        row[0] += 1
        row[1] += turn
        if cls == "valu":
            s = self.waves[w].simd
            self._valu_free[s] = max(self._valu_free[s], t + busy)
        wr = self.waves[w]
        wr.issues += 1
        wr.end = t + turn
        st[0] = t + turn
        st[1] = max(nxt, t + turn)
        st[2] = pc
        st[3] = cls == "barrier"
        st[4] = None
        if len(self.events) < self.max_events:
            self.events.append((w, pc, t, earliest, cause, busy if cls == "valu" else 0))
        else:
            self.events_dropped += 1

    # -- results --------------------------------------------------------------------------

    def totals(self) -> dict[str, float]:
        """Issue count, issue cycles and stall cycles per cause summed over every PC."""
        out = dict.fromkeys(ROW_FIELDS, 0.0)
        for row in self.rows.values():
            for name, v in zip(ROW_FIELDS, row):
                out[name] += v
        return out

    def wave_cycles(self) -> float:
        """Sum of the waves' lifetimes (cycles): the denominator of the stall shares."""
        return sum(w.end - w.start for w in self.waves if w is not None)


_CURRENT: ContextVar = ContextVar("vlpc_issue_recorder", default=None)


def current_recorder():
    """The :class:`IssueRecorder` :func:`recording` installed, or None."""
    return _CURRENT.get()


@contextmanager
def recording(recorder: IssueRecorder):
    """Within the block, :func:`~.cu.simulate_cu` calls without a ``recorder`` report to
    ``recorder`` (so that :func:`~.gpu.model_kernel` needs no parameter for it)."""
    token = _CURRENT.set(recorder)
    try:
        yield recorder
    finally:
        _CURRENT.reset(token)
