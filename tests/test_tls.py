"""TLS (store/tls.py) as redis-server 7.0 serves it: each test runs this server and Debian's
redis-server with the same tls-* parameters and the certificates of tests/tls (made by
tests/tls/make.sh), and expects what a client sees, and what the log says, to agree."""

import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading

import pytest
import redis

from conftest import free_port, spawn_redis, spawn_store, stop, wait_until
from test_scripting import _busy

CERTS = os.path.join(os.path.dirname(__file__), 'tls')
SPAWN = {'store': spawn_store, 'redis': spawn_redis}


def cert(name):
    return os.path.join(CERTS, name)


def tls_args(tls_port, *extra):
    return [
        '--tls-port',
        str(tls_port),
        '--tls-cert-file',
        cert('server.crt'),
        '--tls-key-file',
        cert('server.key'),
        '--tls-ca-cert-file',
        cert('ca.crt'),
        '--tls-dh-params-file',
        cert('redis.dh'),
        *extra,
    ]


@pytest.fixture(params=['store', 'redis'])
def tls_server(request, tmp_path):
    """(kind, plain client, tls port, log path) of a server listening on both ports."""
    kind = request.param
    tls_port, log = free_port(), tmp_path / 'server.log'
    proc, port = SPAWN[kind](*tls_args(tls_port), '--logfile', str(log))
    plain = redis.Redis(port=port, decode_responses=True)
    yield kind, plain, tls_port, log
    plain.close()
    stop(proc)


def tls_client(port, client_cert=True, **kwargs):
    options = {'ssl_certfile': cert('client.crt'), 'ssl_keyfile': cert('client.key')}
    return redis.Redis(
        port=port,
        ssl=True,
        ssl_ca_certs=cert('ca.crt'),
        ssl_check_hostname=False,
        decode_responses=True,
        **(options if client_cert else {}),
        **kwargs,
    )


def client_context():
    ctx = ssl.create_default_context(cafile=cert('ca.crt'))
    ctx.check_hostname = False
    ctx.load_cert_chain(cert('client.crt'), cert('client.key'))
    return ctx


def tls_socket(port, ctx=None):
    """A TLS connection to `port`, its handshake made (OSError if it fails)."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=30)
    return (ctx or client_context()).wrap_socket(sock)


def peer_name(port):
    """The common name of the certificate the server presents to a new connection."""
    with tls_socket(port) as s:
        subject = dict(pair[0] for pair in s.getpeercert()['subject'])
        s.sendall(b'PING\r\n')
        assert s.recv(100) == b'+PONG\r\n'
        return subject['commonName']


def test_clients_with_a_certificate_talk_over_tls(tls_server):
    _, plain, tls_port, _ = tls_server
    client = tls_client(tls_port)
    assert client.set('k', 'v') and client.get('k') == 'v'
    assert plain.get('k') == 'v'  # one data set, two ports
    cli = subprocess.run(
        [
            shutil.which('redis-cli'),
            '--tls',
            '--cacert',
            cert('ca.crt'),
            '--cert',
            cert('client.crt'),
            '--key',
            cert('client.key'),
            '-p',
            str(tls_port),
            'GET',
            'k',
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert cli.stdout == 'v\n'
    pipe = client.pipeline(transaction=False)
    for i in range(2000):
        pipe.set(f'p{i}', 'x' * i)
    pipe.execute()
    assert client.get('p1999') == 'x' * 1999 and plain.dbsize() == 2001


def test_a_client_without_a_certificate_is_refused_unless_optional(tls_server):
    """tls-auth-clients yes (the default): the handshake fails and only that connection
    closes, with Redis's log line; optional and no let it in (read per new connection)."""
    _, plain, tls_port, log = tls_server
    with pytest.raises(redis.ConnectionError):
        tls_client(tls_port, client_cert=False).ping()
    with pytest.raises(redis.ConnectionError):  # a plain client on the TLS port
        redis.Redis(port=tls_port).ping()
    assert plain.ping()
    for reason in ('peer did not return a certificate', 'wrong version number'):
        wait_until(
            lambda reason=reason: any(
                line.split(' ', 5)[-1].startswith('# Error accepting a client connection: ')
                and reason in line
                for line in log.read_text().splitlines()
            ),
            f'the handshake that failed with "{reason}" logged',
        )
    for auth in ('optional', 'no'):
        plain.config_set('tls-auth-clients', auth)
        assert tls_client(tls_port, client_cert=False).ping()
        assert tls_client(tls_port).ping()


def test_config_set_loads_new_certificates_for_new_connections(tls_server):
    """A certificate and key set together reach the next handshake; connections already
    made keep theirs. A certificate whose key does not match fails, the old kept."""
    _, plain, tls_port, _ = tls_server
    kept = tls_client(tls_port)
    assert kept.ping()
    assert peer_name(tls_port) == 'server'
    with pytest.raises(redis.ResponseError) as e:
        plain.config_set('tls-cert-file', cert('server2.crt'))
    assert str(e.value) == (
        "CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
        'Unable to update TLS configuration. Check server logs.'
    )
    assert peer_name(tls_port) == 'server'
    plain.config_set('tls-cert-file', cert('server2.crt'), 'tls-key-file', cert('server2.key'))
    assert peer_name(tls_port) == 'server2'
    assert kept.ping()


@pytest.mark.parametrize(
    'name, value, logged',
    [
        ('tls-cert-file', '/nonexistent/server.crt', 'Failed to load certificate: '),
        ('tls-protocols', 'TLSv1.2 SSLv3', 'Invalid tls-protocols specified. Use a'),
        ('tls-ciphers', 'NO-SUCH-CIPHER', 'Failed to configure ciphers: NO-SUCH-CIPHER'),
        ('tls-ca-cert-file', '/nonexistent/ca.crt', 'Failed to configure CA certificate'),
        ('tls-dh-params-file', '/nonexistent/redis.dh', 'Failed to load /nonexistent/redis.dh'),
    ],
)
def test_a_tls_setting_that_cannot_apply_fails_config_set(tls_server, name, value, logged):
    _, plain, tls_port, log = tls_server
    with pytest.raises(redis.ResponseError) as e:
        plain.config_set(name, value)
    assert str(e.value) == (
        f"CONFIG SET failed (possibly related to argument '{name}') - "
        'Unable to update TLS configuration. Check server logs.'
    )
    text = log.read_text()
    assert f'# {logged}' in text
    assert (
        f'# Failed applying new configuration. Possibly related to new {name} setting. '
        'Restoring previous settings.'
    ) in text
    assert plain.config_get(name)[name] != value
    assert tls_client(tls_port).ping()  # the running contexts are kept


def test_config_set_tls_port_moves_the_listener(tls_server):
    _, plain, tls_port, _ = tls_server
    new = free_port()
    assert plain.config_set('tls-port', str(new))
    assert tls_client(new).ping()
    with pytest.raises(redis.ConnectionError):
        tls_client(tls_port, socket_connect_timeout=5).ping()
    assert plain.config_set('tls-port', '0')
    with pytest.raises(redis.ConnectionError):
        tls_client(new, socket_connect_timeout=5).ping()


@pytest.mark.parametrize('kind', ['store', 'redis'])
@pytest.mark.parametrize(
    'missing, logged',
    [
        ('--tls-key-file', 'No tls-key-file configured!'),
        (
            '--tls-ca-cert-file',
            'Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, '
            'tls-replication or tls-auth-clients are enabled!',
        ),
    ],
)
def test_a_server_whose_tls_cannot_be_configured_does_not_start(kind, missing, logged, tmp_path):
    args = tls_args(free_port())
    i = args.index(missing)
    del args[i : i + 2]
    log = tmp_path / 'server.log'
    exe = [sys.executable, '-m', 'store'] if kind == 'store' else [shutil.which('redis-server')]
    done = subprocess.run(
        [*exe, '--port', str(free_port()), '--save', '', '--logfile', str(log), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    lines = [line.split(' ', 6)[-1] for line in log.read_text().splitlines()]
    assert lines[-2:] == [logged, 'Failed to configure TLS. Check logs for more info.']


@pytest.mark.parametrize('master_kind, replica_kind', [('store', 'redis'), ('redis', 'store')])
def test_a_replica_follows_its_master_over_tls(master_kind, replica_kind):
    """tls-replication yes: the replica connects to the master's tls-port presenting
    tls-client-cert-file, in both directions with redis-server."""
    master_tls = free_port()
    mproc, mport = SPAWN[master_kind](*tls_args(master_tls))
    master = redis.Redis(port=mport, decode_responses=True)
    master.set('before', '1')
    rproc, rport = SPAWN[replica_kind](
        *tls_args(
            free_port(),
            '--tls-replication',
            'yes',
            '--tls-client-cert-file',
            cert('client.crt'),
            '--tls-client-key-file',
            cert('client.key'),
        ),
        '--replicaof',
        '127.0.0.1',
        str(master_tls),
    )
    replica = redis.Redis(port=rport, decode_responses=True)
    try:
        wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'sync')
        master.set('after', '2')
        master.incr('counter', 5)
        wait_until(lambda: replica.get('counter') == '5', 'the stream')
        assert replica.mget('before', 'after') == ['1', '2']
        assert master.info('replication')['connected_slaves'] == 1
    finally:
        replica.close()
        master.close()
        stop(rproc)
        stop(mproc)


def test_a_slow_script_is_killed_over_tls(tls_server):
    """While a script runs past busy-reply-threshold, TLS clients are answered -BUSY and
    SCRIPT KILL from one of them stops it, as over TCP."""
    _, plain, tls_port, _ = tls_server
    plain.config_set('busy-reply-threshold', '50')
    looping = tls_client(tls_port)
    admin = tls_client(tls_port)
    assert admin.ping()
    done = {}

    def run():
        try:
            looping.eval('while true do end', 0)
        except redis.ResponseError as e:
            done['error'] = str(e)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: _busy(admin), 'the script to be busy')
    assert admin.script_kill()
    thread.join(60)
    assert done['error'].startswith('Script killed by user with SCRIPT KILL')
    assert admin.ping()


def test_a_client_that_sends_close_notify_is_gone_at_once(tls_server):
    """A client closing its TLS session (close_notify, then waiting for the server's, as
    asyncio's clients and a replica's link do) is dropped at once, not when the socket
    finally closes (a replica's REPLICAOF NO ONE left its master's BGSAVE running)."""
    _, plain, tls_port, _ = tls_server
    s = tls_socket(tls_port)
    s.sendall(b'CLIENT SETNAME leaving\r\n')
    assert s.recv(100) == b'+OK\r\n'
    try:
        s.unwrap()  # returns once the server's close_notify came back
    except ssl.SSLEOFError:
        pass  # redis-server closes without one
    s.close()
    wait_until(lambda: all(c['name'] != 'leaving' for c in plain.client_list()), 'the client gone')


def _cipher_of(port, ciphers):
    """The cipher a TLS 1.2 client offering `ciphers` (in its order) gets, or None when
    the handshake fails."""
    ctx = client_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(ciphers)
    try:
        with tls_socket(port, ctx) as s:
            return s.cipher()[0]
    except (ssl.SSLError, ConnectionError):
        return None


def test_config_set_ciphers_and_their_order_reach_new_connections(tls_server):
    """tls-ciphers and tls-prefer-server-ciphers set by CONFIG SET apply to the next
    handshake (Redis's unit/tls): the client's order wins unless the server's is
    preferred."""
    _, plain, tls_port, _ = tls_server
    plain.config_set('tls-protocols', 'TLSv1.2')
    plain.config_set('tls-ciphers', 'DEFAULT:-AES128-SHA256')
    assert _cipher_of(tls_port, 'AES128-SHA256') is None
    assert _cipher_of(tls_port, 'AES256-SHA256') == 'AES256-SHA256'
    plain.config_set('tls-ciphers', 'AES128-SHA256:AES256-SHA256')
    assert _cipher_of(tls_port, 'AES256-SHA256:AES128-SHA256') == 'AES256-SHA256'
    plain.config_set('tls-prefer-server-ciphers', 'yes')
    assert _cipher_of(tls_port, 'AES256-SHA256:AES128-SHA256') == 'AES128-SHA256'


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_tls_replica_announces_its_tls_port(kind):
    """Under tls-replication a replica gives its master its tls-port as its listening
    port (what INFO shows and FAILOVER looks for), not the plain one."""
    master_tls = free_port()
    mproc, mport = spawn_store(*tls_args(master_tls))
    master = redis.Redis(port=mport, decode_responses=True)
    replica_tls = free_port()
    rproc, _ = SPAWN[kind](
        *tls_args(replica_tls, '--tls-replication', 'yes'),
        '--replicaof',
        '127.0.0.1',
        str(master_tls),
    )
    try:
        wait_until(lambda: master.info('replication').get('slave0', {}).get('state'), 'sync')
        assert master.info('replication')['slave0']['port'] == replica_tls
    finally:
        master.close()
        stop(rproc)
        stop(mproc)


def test_config_set_bind_moves_the_tls_listener_too(tls_server):
    """changeBindAddr closes and opens the TLS listeners with the plain ones; a bind that
    cannot be taken fails and leaves both where they were."""
    _, plain, tls_port, log = tls_server
    with pytest.raises(redis.ResponseError, match='Failed to bind to specified addresses'):
        plain.config_set('bind', '999.999.999.999')
    assert tls_client(tls_port).ping()
    assert plain.config_set('bind', '127.0.0.2')
    with pytest.raises(redis.ConnectionError):
        tls_client(tls_port, socket_connect_timeout=5).ping()
    assert tls_client(tls_port, host='127.0.0.2').ping()
    moved = redis.Redis(host='127.0.0.2', port=plain.connection_pool.connection_kwargs['port'])
    assert moved.config_set('bind', '')
    with pytest.raises(redis.ConnectionError):
        tls_client(tls_port, host='127.0.0.2', socket_connect_timeout=5).ping()


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_tls_client_over_maxclients_is_dropped_before_its_handshake(kind):
    """acceptCommonHandler refuses a client before any TLS is spoken: the error line
    cannot be written, so the client's handshake fails, and the refusal is counted."""
    tls_port = free_port()
    proc, port = SPAWN[kind](*tls_args(tls_port), '--maxclients', '2')
    admin = redis.Redis(port=port)
    first = tls_client(tls_port)
    try:
        assert admin.ping() and first.ping()  # two clients of two
        with pytest.raises(OSError):  # (the handshake meets the end of the connection)
            tls_socket(tls_port)
        assert admin.info('stats')['rejected_connections'] == 1
        first.close()
        wait_until(lambda: admin.info('clients')['connected_clients'], 1)
        assert tls_client(tls_port).ping()
    finally:
        admin.close()
        stop(proc)


@pytest.mark.parametrize('source_kind, target_kind', [('store', 'redis'), ('redis', 'store')])
def test_migrate_speaks_tls_to_its_target_under_tls_cluster(source_kind, target_kind):
    """migrateGetSocket connects over TLS when tls-cluster is on, to the target's
    tls-port, presenting the client certificate."""
    target_tls = free_port()
    tproc, tport = SPAWN[target_kind](*tls_args(target_tls))
    target = redis.Redis(port=tport)
    sproc, sport = SPAWN[source_kind](*tls_args(free_port(), '--tls-cluster', 'yes'))
    source = redis.Redis(port=sport)
    try:
        source.set('k', 'v', px=100_000)
        source.rpush('list', *range(100))
        assert source.migrate('127.0.0.1', target_tls, ['k', 'list'], 0, 5000)
        assert target.get('k') == b'v' and 0 < target.pttl('k') <= 100_000
        assert target.lrange('list', 0, -1) == [b'%d' % i for i in range(100)]
        assert source.exists('k', 'list') == 0
    finally:
        source.close()
        target.close()
        stop(sproc)
        stop(tproc)
