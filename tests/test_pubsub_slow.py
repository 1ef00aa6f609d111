"""A subscriber that never reads while 1 GB is published.

The server runs as a subprocess (`python -m store`) so its RSS can be read from /proc:
- the publisher is throttled once publish-buffer-limit (32 MB here) is queued, so RSS stays
  within the limit plus a margin instead of growing with what is published;
- the subscriber stays above the pubsub soft output limit (16 MB) for more than 2 s and is
  disconnected, as Redis does (never sooner: the first PUBLISH that finds nobody ends at
  least 2 s after the first one started);
- the publisher then resumes (its publishes find no subscriber) and the server keeps serving.
"""

import os
import threading
import time

import pytest
import redis

from conftest import WAIT, spawn_store, stop
from rawconn import RawConn

pytestmark = pytest.mark.slow

PAGE = os.sysconf('SC_PAGE_SIZE')
LIMIT = 32 * 1024 * 1024
MESSAGE = 1024 * 1024
TOTAL = 1024**3


def rss(pid):
    with open(f'/proc/{pid}/statm') as f:
        return int(f.read().split()[1]) * PAGE


def test_slow_subscriber_bounded_memory_throttle_then_disconnect():
    proc, port = spawn_store(
        '--publish-buffer-limit', '32mb', '--client-output-buffer-limit', 'pubsub 0 16mb 2'
    )
    try:
        r = redis.Redis(port=port)
        r.ping()
        base = rss(proc.pid)
        sub = RawConn(port, rcvbuf=4096)
        assert sub.cmd('SUBSCRIBE', 'slow') == b'*3\r\n$9\r\nsubscribe\r\n$4\r\nslow\r\n:1\r\n'

        peak = [base]
        stop_sampling = threading.Event()

        def sample():
            while not stop_sampling.is_set():
                peak[0] = max(peak[0], rss(proc.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        payload = b'p' * MESSAGE
        receivers = []
        first_nobody = None
        pub = redis.Redis(port=port, socket_timeout=WAIT)
        t_start = time.monotonic()
        for _ in range(TOTAL // MESSAGE):
            receivers.append(pub.publish('slow', payload))
            if first_nobody is None and receivers[-1] == 0:
                first_nobody = time.monotonic()
        elapsed = time.monotonic() - t_start
        stop_sampling.set()
        sampler.join()

        delivered = receivers.count(1)
        # throttled: the publisher waited while the subscriber was connected, and only
        # ~the limit's worth reached its queue
        assert r.info('stats')['pubsub_publisher_waits'] >= 1
        assert delivered * MESSAGE < LIMIT + 16 * MESSAGE, delivered
        # then the subscriber was dropped, not before 2 s over the soft limit, and the
        # rest found nobody
        assert first_nobody is not None and first_nobody - t_start >= 2.0
        assert receivers[-1] == 0 and receivers.count(0) == len(receivers) - delivered
        assert r.pubsub_numsub('slow') == [(b'slow', 0)]
        # RSS: publish-buffer-limit plus a margin (parser buffers, allocator slack)
        assert peak[0] - base < LIMIT + 96 * 1024 * 1024, (peak[0] - base) / 2**20
        # the subscriber's socket was closed by the server
        assert sub.closed_by_peer()
        # and the server keeps serving
        assert r.ping() and r.set('after', '1') and r.get('after') == b'1'
        print(
            f'1 GB published in {elapsed:.1f}s; peak RSS growth '
            f'{(peak[0] - base) / 2**20:.0f} MB; dropped after '
            f'{first_nobody - t_start:.2f}s; {delivered} messages queued before the '
            'disconnect'
        )
        sub.close()
        pub.close()
        r.close()
    finally:
        stop(proc)
