"""The package's shape: no import circle anywhere in `store`, and every module placed in
the layers of the import-linter contract in pyproject.toml (which scripts/test checks)."""

import ast
import pathlib
import re
import tomllib

import grimp

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_no_import_circle():
    graph = grimp.build_graph('store')
    circles = sorted(
        {
            tuple(sorted((m, n)))
            for m in graph.modules
            for n in graph.find_modules_directly_imported_by(m)
            if graph.chain_exists(importer=n, imported=m)
        }
    )
    assert circles == []


def test_the_layers_contract_names_every_module():
    """import-linter checks only the modules its layers name: a module left out could
    import upwards unnoticed, so every module and package of `store` has its layer."""
    config = tomllib.loads((ROOT / 'pyproject.toml').read_text())
    (contract,) = config['tool']['importlinter']['contracts']
    named = {m.strip() for layer in contract['layers'] for m in re.split('[|:]', layer)}
    package = ROOT / 'store'
    modules = {p.stem for p in package.glob('*.py') if p.stem != '__init__'}
    modules |= {p.parent.name for p in package.glob('*/__init__.py')}
    assert modules - named == set()
    assert named - modules == set()


# A shard's dicts (store/db_slice's DbSlice); other classes' attributes of these names are
# read off these names (the snapshot's units, the RDB loader's buffer) or off `self`.
SHARD_DICTS = {'data', 'expires', 'access', 'charged'}
NOT_SHARDS = {'self', 'unit', 'u', 'loader', 'os'}


def test_only_the_shard_touches_its_dicts():
    """DbSlice owns its dicts: everything else, the keyspace included, finds, writes and
    removes keys through its methods (and reads a shard through read-only views: keys,
    values, deadlines, accesses, count), so that what a key's life involves (charges, the
    deadline index, the per-slot index) stays in one place. Only store/db_slice indexes
    the dicts."""
    found = []
    for path in sorted((ROOT / 'store').rglob('*.py')):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith('store/db_slice/'):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in SHARD_DICTS:
                base = node.value
                if not (isinstance(base, ast.Name) and base.id in NOT_SHARDS):
                    found.append(f'{rel}:{node.lineno} {ast.unparse(node)}')
    assert found == []


# Keyspace methods taking (db, key) that need not call the running snapshot's `before`
# themselves: reads that do not record anything the snapshot writes, and methods only
# ever called after one of the hooked look-ups of the same key in the same command (which
# wrote the key out first).
SNAPSHOT_UNHOOKED = {
    'deadline',  # lookup_notouch -> lookup
    'deadline_of_found',  # a read, after read_notouch
    'exists',  # lookup_notouch -> lookup
    'stored',  # a read that expires nothing (WATCH)
    'lookup_notouch',  # -> lookup
    'read_notouch',  # -> read
    'persist',  # -> lookup
    'frequency',
    'idle_ms',
    'key_size',
    'set_access',
    'value_class',
    'materialize',
    'mark',
    'touch',
    'replaced',  # after lookup_for_update
    'string_written',  # after lookup(buffer=True)
    'updated',  # after a lookup
}


def test_every_key_writer_lets_a_snapshot_write_the_key_first():
    """While a BGSAVE snapshot runs, the Keyspace methods through which commands reach
    keys call its `before` (persistence/snapshot.py) once they have routed the key, so
    that the key is written out as it was before it changes. A new such method must call
    it or be listed above as needing no call; one that did neither let EXPIREs issued
    after a BGSAVE leak into it."""
    import inspect

    from store.keyspace import Keyspace

    takes_a_key = {
        name
        for name, fn in inspect.getmembers(Keyspace, inspect.isfunction)
        if not name.startswith('_') and list(inspect.signature(fn).parameters)[1:3] == ['db', 'key']
    }
    hooked = {
        name
        for name in takes_a_key | {'set_pairs'}
        if 'snapshot.before(' in inspect.getsource(getattr(Keyspace, name))
    }
    assert 'set_pairs' in hooked
    assert takes_a_key - hooked - SNAPSHOT_UNHOOKED == set()
    assert hooked & SNAPSHOT_UNHOOKED == set()
