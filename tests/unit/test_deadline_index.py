"""store/expiry/index.py (DeadlineIndex) driven as the keyspace and the active expiry drive
it, against an oracle of (db, key) -> deadline.

The test plays three roles, each copied from the code that owns it:
- the keyspace (store/keyspace.py): it keeps `expires[db][key]`, stores the int `add`
  returns, passes the key's previous deadline as `old`, calls `discard()` after removing a
  deadline, lazily expires a key whose deadline passed before touching it, and on FLUSHDB /
  SWAPDB calls `clear` / `swap` around replacing / swapping the `expires` dicts;
- the active expiry step (store/expiry/active.py): `promote` until it returns 0, then
  `pop_due`, in chunks; an entry whose deadline differs from `expires` is stale
  (`stale -= 1`), otherwise the key is deleted; a time budget may end a step early, the
  next step carries on;
- the timer: it fires 1 ms after `earliest()`.

A key is due when deadline < now (Redis's keyIsExpired). The properties: a step that runs to
completion deletes exactly the keys due at its `now` and no other, no popped entry is ever
due later than `now`, every key is deleted once time passes its deadline, `earliest()` is
never later than the earliest live deadline, and the counters satisfy
entries - stale == live deadlines.
"""

import random

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from store.expiry.index import COARSE_MS, DeadlineIndex

NDB = 3
KEYS = [b'k%d' % i for i in range(6)]
BASE = 1_700_000_000_123  # ms since the epoch, not aligned to a window


class Model:
    """The keyspace's side of the contract, plus the active expiry step."""

    def __init__(self, ndb=NDB, now=BASE):
        self.expires = [{} for _ in range(ndb)]
        self.index = DeadlineIndex(self.expires)
        self.now = now
        self.expired = []  # (db, key, deadline) deleted by the active step
        self.max_deadline = now

    # -- keyspace ----------------------------------------------------------------------

    def lazy_expire(self, db, key):
        """Keyspace.lookup/_expire: a key found past its deadline is deleted first."""
        exp = self.expires[db]
        deadline = exp.get(key)
        if deadline is not None and deadline < self.now:
            del exp[key]
            self.index.discard()

    def set_deadline(self, db, key, deadline):
        """Keyspace.set with a deadline, and Keyspace.set_deadline (EXPIRE and friends)."""
        self.lazy_expire(db, key)
        exp = self.expires[db]
        stored = self.index.add(db, key, deadline, exp.get(key))
        assert stored == deadline
        exp[key] = stored
        self.max_deadline = max(self.max_deadline, deadline)

    def remove_deadline(self, db, key):
        """Keyspace.persist / delete / set without TTL: the deadline goes away."""
        self.lazy_expire(db, key)
        exp = self.expires[db]
        if key in exp:
            del exp[key]
            self.index.discard()

    def flushdb(self, db):
        self.index.clear(db)  # reads expires[db]: before it is replaced
        self.expires[db] = {}

    def swapdb(self, a, b):
        self.expires[a], self.expires[b] = self.expires[b], self.expires[a]
        self.index.swap(a, b)

    # -- ActiveExpiry.step ---------------------------------------------------------------

    def step(self, chunk=64, budget=None):
        """Returns (completed, popped triples). `budget` counts loop turns instead of
        wall-clock time."""
        index, now = self.index, self.now
        popped = []
        turns = 0
        while True:
            if not index.promote(now, chunk):
                due = index.pop_due(now, chunk)
                if not due:
                    return True, popped
                assert len(due) <= chunk
                popped.extend(due)
                for db, key, deadline in due:
                    assert deadline < now, 'popped before it was due'
                    exp = self.expires[db]
                    if exp.get(key) == deadline:
                        del exp[key]
                        self.expired.append((db, key, deadline))
                    else:
                        index.stale -= 1
            turns += 1
            if budget is not None and turns >= budget:
                return False, popped

    def live(self):
        return {(db, key): d for db, exp in enumerate(self.expires) for key, d in exp.items()}


dbs = st.integers(0, NDB - 1)
keys = st.sampled_from(KEYS)


class DeadlineIndexMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.m = Model()
        self.mass_runs = 0

    @rule(
        db=dbs,
        key=keys,
        delta=st.one_of(
            st.integers(-3, 2 * COARSE_MS),
            st.integers(0, 8 * COARSE_MS),
            st.sampled_from([0, 1, COARSE_MS - 1, COARSE_MS, COARSE_MS + 1]),
        ),
    )
    def set_ttl(self, db, key, delta):
        self.m.set_deadline(db, key, self.m.now + delta)

    @rule(db=dbs, key=keys, delta=st.integers(-2 * COARSE_MS, 2 * COARSE_MS))
    def retime_in_same_window(self, db, key, delta):
        """A TTL change that lands near the old deadline (often in the same window)."""
        old = self.m.expires[db].get(key)
        if old is not None and old + delta >= self.m.now:
            self.m.set_deadline(db, key, old + delta)

    @rule(db=dbs, key=keys)
    def persist(self, db, key):
        self.m.remove_deadline(db, key)

    @rule(db=dbs)
    def flushdb(self, db):
        self.m.flushdb(db)

    @rule(a=dbs, b=dbs)
    def swapdb(self, a, b):
        self.m.swapdb(a, b)

    @rule(dt=st.one_of(st.integers(0, 5), st.integers(0, 3 * COARSE_MS)))
    def advance(self, dt):
        self.m.now += dt

    @rule(chunk=st.integers(1, 8), budget=st.one_of(st.none(), st.integers(1, 4)))
    def step(self, chunk, budget):
        m = self.m
        before = m.live()
        due = {k for k, d in before.items() if d < m.now}
        n_expired = len(m.expired)
        completed, popped = m.step(chunk, budget)
        expired = m.expired[n_expired:]
        deleted = {(db, key) for db, key, _ in expired}
        assert len(deleted) == len(expired)  # a key is deleted at most once
        for db, key, deadline in expired:
            assert before[(db, key)] == deadline  # at its current deadline
        assert deleted <= due  # never a key that is not due
        if completed:
            assert deleted == due  # and every key that is
            deadlines = [d for _, _, d in popped]
            assert deadlines == sorted(deadlines)  # in deadline order

    @rule(chunk=st.integers(1, 8))
    def timer_fires(self, chunk):
        """ActiveExpiry.reschedule: the timer fires 1 ms after earliest()."""
        m = self.m
        earliest = m.index.earliest()
        if earliest is None:
            return
        m.now = max(m.now, earliest + 1)
        due = {k for k, d in m.live().items() if d < m.now}
        n_expired = len(m.expired)
        completed, _ = m.step(chunk)
        assert completed
        assert {(db, key) for db, key, _ in m.expired[n_expired:]} == due

    @precondition(lambda self: self.mass_runs < 1)
    @rule(db=dbs, seed=st.integers(0, 2**16), retime=st.booleans())
    def mass_churn(self, db, seed, retime):
        """Enough stale entries (> 1024) to make the index rebuild itself: from deletions,
        or (retime) from TTL changes, where the rebuild runs inside add() while expires
        still holds the old deadline."""
        self.mass_runs += 1
        m = self.m
        rnd = random.Random(seed)
        names = [b'm%d' % i for i in range(1100)]
        for name in names:
            m.set_deadline(db, name, m.now + rnd.randrange(0, 6 * COARSE_MS))
        if retime:
            for name in names:
                m.set_deadline(db, name, m.now + rnd.randrange(6, 12) * COARSE_MS)
        for name in names[:-20]:
            m.remove_deadline(db, name)
        assert m.index.stale <= 1024  # a rebuild happened on the way

    @invariant()
    def counters(self):
        index = self.m.index
        live = sum(len(exp) for exp in self.m.expires)
        assert index.stale >= 0
        assert index.entries - index.stale == live
        assert index.size() == index.entries

    @invariant()
    def earliest_is_not_late(self):
        live = self.m.live()
        earliest = self.m.index.earliest()
        if live:
            assert earliest is not None
            assert earliest <= min(live.values())

    def teardown(self):
        """Every live key is deleted once time passes its deadline; then nothing is left."""
        m = self.m
        live = m.live()
        m.now = max(m.now, m.max_deadline) + 2 * COARSE_MS
        n_expired = len(m.expired)
        completed, _ = m.step(chunk=5)
        assert completed
        assert {(db, key): d for db, key, d in m.expired[n_expired:]} == live
        assert m.live() == {}
        assert m.index.earliest() is None
        assert m.index.entries == 0 and m.index.stale == 0


TestDeadlineIndex = DeadlineIndexMachine.TestCase
TestDeadlineIndex.settings = settings(
    max_examples=80, stateful_step_count=40, deadline=None, database=None
)


# -- deterministic cases -------------------------------------------------------------------


def test_due_means_strictly_before_now():
    m = Model()
    m.set_deadline(0, b'k', m.now + 10)
    m.now += 10  # now == deadline: not due yet
    assert m.step() == (True, [])
    assert m.live() == {(0, b'k'): m.now}
    m.now += 1
    completed, popped = m.step()
    assert completed and popped == [(0, b'k', m.now - 1)]
    assert m.live() == {}


def test_add_returns_a_shared_int_for_the_same_deadline():
    m = Model()
    d = m.now + 5000
    a = m.index.add(0, b'a', d)
    b = m.index.add(1, b'b', int(str(d)))  # an equal int, a different object
    assert a == d and b is a


def test_ttl_change_within_an_unpromoted_window_files_nothing():
    m = Model()
    start = (m.now // COARSE_MS + 3) * COARSE_MS  # a window that starts later
    m.set_deadline(0, b'k', start + 100)
    assert m.index.size() == 1
    m.set_deadline(0, b'k', start + 900)  # same window: the entry covers it
    assert m.index.size() == 1 and m.index.stale == 0
    m.set_deadline(0, b'k', start + 5)  # earlier, still the same window
    assert m.index.size() == 1 and m.index.stale == 0
    m.now = start + 5  # not due at its deadline ...
    assert m.step() == (True, [])
    m.now = start + 6  # ... due 1 ms later, not at +100
    completed, popped = m.step()
    assert popped == [(0, b'k', start + 5)] and m.live() == {}


def test_ttl_moved_to_an_earlier_window_leaves_a_stale_entry():
    m = Model()
    m.set_deadline(0, b'k', m.now + 10 * COARSE_MS)
    m.set_deadline(0, b'k', m.now + 100)
    assert m.index.stale == 1 and m.index.size() == 2
    m.now += 101
    completed, popped = m.step()
    assert completed and m.expired == [(0, b'k', m.now - 1)] and m.live() == {}
    m.now += 10 * COARSE_MS  # the old entry's window comes up: dropped
    assert m.step() == (True, [])
    assert m.index.stale == 0 and m.index.size() == 0


def test_ttl_moved_to_later_windows_files_nothing_and_expires_on_time():
    """A TTL refreshed again and again (EXPIRE on every use) keeps its one entry, which
    promotion moves on to the window of the deadline the key has when it comes up."""
    m = Model()
    first = m.now + 100
    for i in range(50):
        m.set_deadline(0, b'k', first + i * COARSE_MS)
    assert m.index.size() == 1 and m.index.stale == 0
    last = first + 49 * COARSE_MS
    for now in range(m.now, last + 1, 97):  # the timer fires all along the way
        m.now = now
        assert m.step()[0] and m.expired == []
    m.now = last  # not due at its deadline ...
    assert m.step() == (True, []) and m.live()
    m.now = last + 1  # ... due 1 ms later
    assert m.step()[1] == [(0, b'k', last)] and m.live() == {}
    assert m.index.size() == 0 and m.index.stale == 0


def test_mass_expiry_in_small_budgets_deletes_everything_in_order():
    m = Model()
    rnd = random.Random(7)
    for i in range(3000):
        m.set_deadline(i % NDB, b'k%d' % i, m.now + rnd.randrange(0, 4 * COARSE_MS))
    m.now += 5 * COARSE_MS
    steps = 0
    while True:
        steps += 1
        completed, _ = m.step(chunk=16, budget=3)
        if completed:
            break
    assert steps > 10
    assert m.live() == {} and len(m.expired) == 3000
    deadlines = [d for _, _, d in m.expired]
    assert deadlines == sorted(deadlines)


def test_stale_count_survives_a_rebuild_during_a_ttl_change():
    """Regression (fixed in a541495): the rebuild triggered by add()'s discard() refiled
    the key under its old deadline and that entry was never counted stale."""
    m = Model()
    # One key whose TTL moves to an earlier window 1100 times: each move leaves one stale
    # entry, and the 1025th triggers a rebuild inside add().
    for i in range(1100):
        m.set_deadline(0, b'k', m.now + (1100 - i) * COARSE_MS)
    index = m.index
    live = sum(len(exp) for exp in m.expires)
    assert index.entries - index.stale == live
    m.now += 2000 * COARSE_MS
    m.step()
    assert index.stale >= 0
