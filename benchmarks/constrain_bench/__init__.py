"""The throughput suite: every installed backend on the same workloads, the
same vocabularies and the same decoding loop, written up as
``docs/bench/REPORT.md`` (``python -m constrain_bench`` or ``nox -s bench``)."""
