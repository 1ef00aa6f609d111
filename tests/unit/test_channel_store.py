"""store/pubsub/channel_store.py (ChannelStore) against a plain-dict model.

The store is driven the way store/pubsub/dispatch.py drives it: a subscriber keeps its own
set per namespace, records only keys it does not hold yet (subscribe) or does hold
(unsubscribe) in one Updater per command, and applies it once. The model is
{(kind, key): [subscriber, ...]} in subscription order; the pattern index is checked against
testing every registered pattern with the glob matcher.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from store.glob import glob_match
from store.pubsub.channel_store import CHANNELS, PATTERNS, SHARD_CHANNELS, ChannelStore

KINDS = (CHANNELS, PATTERNS, SHARD_CHANNELS)


class Sub:
    """Stands in for dispatch.Subscriber: the store only keeps and compares it."""

    def __init__(self, name):
        self.name = name
        self.sets = ({}, {}, {})

    def __repr__(self):
        return f'Sub({self.name})'


# Small alphabets, so that patterns and channels overlap and prefixes/suffixes collide.
channel_names = st.lists(st.sampled_from(b'ab.'), max_size=5).map(bytes)
pattern_names = st.one_of(
    st.lists(st.sampled_from(b'ab.*?'), max_size=5).map(bytes),
    st.lists(
        st.sampled_from([b'a', b'b', b'.', b'*', b'?', b'[ab]', b'[^a]', b'\\*', b'\\?', b'[a-b]']),
        max_size=4,
    ).map(b''.join),
)
probe_channels = st.lists(st.sampled_from(b'ab.*?'), max_size=6).map(bytes)


def subscribe(store, sub, kind, keys):
    """dispatch.PubSub.subscribe, minus the replies."""
    mine = sub.sets[kind]
    updater = None
    for key in keys:
        if key not in mine:
            mine[key] = None
            if updater is None:
                updater = store.updater(kind, sub, True)
            updater.record(key)
    if updater is not None:
        updater.apply()


def unsubscribe(store, sub, kind, keys):
    """dispatch.PubSub.unsubscribe, minus the replies; keys None means all of `kind`."""
    mine = sub.sets[kind]
    if keys is None:
        keys = list(mine)
    updater = None
    for key in keys:
        if key in mine:
            del mine[key]
            if updater is None:
                updater = store.updater(kind, sub, False)
            updater.record(key)
    if updater is not None:
        updater.apply()


def pattern_entry(store, pattern):
    for shard in store.patterns:
        if pattern in shard:
            return shard[pattern]
    return None


def snapshot(store, kind, key):
    """What a publish would iterate: the subscriber tuple (or the pattern's)."""
    if kind == PATTERNS:
        entry = pattern_entry(store, key)
        return None if entry is None else entry.subs
    return store.subscribers(key, kind)


class ChannelStoreMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.store = ChannelStore()
        self.subs = [Sub(i) for i in range(4)]
        self.model = {}  # (kind, key) -> [sub, ...] in subscription order
        self.probes = set()  # channels to probe the pattern index with

    def _names(self, kind, data):
        if kind == PATTERNS:
            return data.draw(st.lists(pattern_names, min_size=1, max_size=4))
        return data.draw(st.lists(channel_names, min_size=1, max_size=4))

    def _snapshots(self):
        """Every current snapshot with a copy of its contents, taken before a change."""
        return [
            (snapshot(self.store, kind, key), tuple(subs))
            for (kind, key), subs in self.model.items()
        ]

    def _check_snapshots_untouched(self, before):
        for snap, contents in before:
            assert isinstance(snap, tuple)
            assert snap == contents  # copy-on-write: the old tuple did not change

    @rule(i=st.integers(0, 3), kind=st.sampled_from(KINDS), data=st.data())
    def do_subscribe(self, i, kind, data):
        sub = self.subs[i]
        keys = self._names(kind, data)
        before = self._snapshots()
        held = set(sub.sets[kind])
        for key in keys:
            if key not in held:
                held.add(key)
                self.model.setdefault((kind, key), []).append(sub)
        subscribe(self.store, sub, kind, keys)
        self._check_snapshots_untouched(before)
        if kind != PATTERNS:
            self.probes.update(keys)

    @rule(i=st.integers(0, 3), kind=st.sampled_from(KINDS), data=st.data())
    def do_unsubscribe(self, i, kind, data):
        sub = self.subs[i]
        if data.draw(st.booleans()) and sub.sets[kind]:
            keys = list(data.draw(st.lists(st.sampled_from(sorted(sub.sets[kind])), max_size=3)))
            keys += self._names(kind, data)[:1]  # and one it may not hold
        else:
            keys = None
        before = self._snapshots()
        held = set(sub.sets[kind])
        for key in list(sub.sets[kind]) if keys is None else keys:
            if key in held:
                held.discard(key)
                subs = self.model[(kind, key)]
                subs.remove(sub)
                if not subs:
                    del self.model[(kind, key)]
        unsubscribe(self.store, sub, kind, keys)
        self._check_snapshots_untouched(before)

    @rule(i=st.integers(0, 3))
    def disconnect(self, i):
        """dispatch.PubSub.forget: unsubscribe from everything of every kind."""
        sub = self.subs[i]
        for kind in KINDS:
            for key in sub.sets[kind]:
                subs = self.model[(kind, key)]
                subs.remove(sub)
                if not subs:
                    del self.model[(kind, key)]
            unsubscribe(self.store, sub, kind, None)

    @rule(channel=probe_channels)
    def add_probe(self, channel):
        self.probes.add(channel)

    @invariant()
    def subscribers_match_model(self):
        store = self.store
        for kind in KINDS:
            keys = {key for (k, key) in self.model if k == kind}
            listed = list(store.keys(kind))
            assert len(listed) == len(set(listed))
            assert set(listed) == keys
            assert store.counts[kind] == len(keys)
            for key in keys:
                assert snapshot(store, kind, key) == tuple(self.model[(kind, key)])
        for channel in self.probes:
            for kind in (CHANNELS, SHARD_CHANNELS):
                expected = self.model.get((kind, channel))
                if expected is None:
                    assert store.subscribers(channel, kind) is None
                    assert store.count_subscribers(channel, kind) == 0
                else:
                    assert store.subscribers(channel, kind) == tuple(expected)
                    assert store.count_subscribers(channel, kind) == len(expected)

    @invariant()
    def pattern_index_is_exact(self):
        patterns = [key for (kind, key) in self.model if kind == PATTERNS]
        for channel in self.probes | {b'', b'a', b'ab', b'a.b'}:
            found = self.store.matching_patterns(channel)
            names = [e.pattern for e in found]
            assert len(names) == len(set(names)), names  # each at most once
            assert set(names) == {p for p in patterns if glob_match(p, channel)}
            for e in found:
                assert e.subs == tuple(self.model[(PATTERNS, e.pattern)])


TestChannelStore = ChannelStoreMachine.TestCase
TestChannelStore.settings = settings(
    max_examples=50, stateful_step_count=25, deadline=None, database=None
)


@settings(max_examples=100, deadline=None, database=None)
@given(
    patterns=st.lists(pattern_names, max_size=25, unique=True),
    channels=st.lists(probe_channels, max_size=10),
)
def test_matching_patterns_equals_testing_every_pattern(patterns, channels):
    store = ChannelStore()
    subs = {}
    for p in patterns:
        subs[p] = Sub(p)
        subscribe(store, subs[p], PATTERNS, [p])
    assert store.counts[PATTERNS] == len(patterns)
    for channel in channels + [b'', b'.', b'a*', b'ab.ab']:
        found = store.matching_patterns(channel)
        names = [e.pattern for e in found]
        assert len(names) == len(set(names))
        assert set(names) == {p for p in patterns if glob_match(p, channel)}
        assert all(e.subs == (subs[e.pattern],) for e in found)
    # remove every other pattern: the index forgets exactly those
    for p in patterns[::2]:
        unsubscribe(store, subs[p], PATTERNS, [p])
    kept = patterns[1::2]
    assert store.counts[PATTERNS] == len(kept)
    for channel in channels + [b'', b'.', b'a*']:
        names = [e.pattern for e in store.matching_patterns(channel)]
        assert sorted(names) == sorted(p for p in kept if glob_match(p, channel))


def test_snapshot_survives_unsubscribe_during_iteration():
    """A publish iterates the tuple it read; subscribers leaving (or joining) meanwhile do
    not change what it iterates, and the next publish sees the new tuple."""
    store = ChannelStore()
    subs = [Sub(i) for i in range(5)]
    for s in subs:
        subscribe(store, s, CHANNELS, [b'news'])
    snap = store.subscribers(b'news')
    seen = []
    for s in snap:
        seen.append(s)
        unsubscribe(store, s, CHANNELS, [b'news'])  # leaves mid-publish
        subscribe(store, Sub('late'), CHANNELS, [b'news'])  # someone else joins
    assert seen == subs
    assert snap == tuple(subs)
    assert len(store.subscribers(b'news')) == 5
    assert all(s.name == 'late' for s in store.subscribers(b'news'))


def test_pattern_entry_is_kept_while_its_tuple_is_replaced():
    store = ChannelStore()
    a, b = Sub('a'), Sub('b')
    subscribe(store, a, PATTERNS, [b'news.*'])
    entry = store.matching_patterns(b'news.x')[0]
    old = entry.subs
    subscribe(store, b, PATTERNS, [b'news.*'])
    assert store.matching_patterns(b'news.x') == [entry]  # same entry object
    assert old == (a,)  # old snapshot untouched
    assert entry.subs == (a, b)
    unsubscribe(store, a, PATTERNS, [b'news.*'])
    assert entry.subs == (b,)
    assert store.counts[PATTERNS] == 1
    unsubscribe(store, b, PATTERNS, [b'news.*'])
    assert store.matching_patterns(b'news.x') == []
    assert store.counts[PATTERNS] == 0
    assert list(store.keys(PATTERNS)) == []


def test_namespaces_are_separate():
    store = ChannelStore()
    s = Sub('s')
    subscribe(store, s, CHANNELS, [b'x'])
    subscribe(store, s, SHARD_CHANNELS, [b'y'])
    subscribe(store, s, PATTERNS, [b'x'])
    assert store.subscribers(b'x', CHANNELS) == (s,)
    assert store.subscribers(b'x', SHARD_CHANNELS) is None
    assert store.subscribers(b'y', SHARD_CHANNELS) == (s,)
    assert store.subscribers(b'y', CHANNELS) is None
    assert store.counts == [1, 1, 1]
    assert [e.pattern for e in store.matching_patterns(b'x')] == [b'x']
