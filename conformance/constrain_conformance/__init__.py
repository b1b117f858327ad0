"""constrain-conformance: the conformance suite of constrain-api, as a pytest plugin.

Run it on any installed backend::

    pytest --pyargs constrain_conformance.suite --backend NAME

The checks live in :mod:`constrain_conformance.checks`, the corpus in
:mod:`constrain_conformance.corpus`, the token paths in
:mod:`constrain_conformance.paths`.
"""
