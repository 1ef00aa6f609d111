"""The package's shape: no import circle anywhere in `store` (the layers themselves are an
import-linter contract in pyproject.toml, checked by scripts/test)."""

import grimp


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
