"""The test modules pytest collects with ``--pyargs constrain_conformance.suite``."""
