"""Library code the benchmark scripts (``benchmarks/``) and their tests share.

The scripts import it as ``vlpc.benchmarking.<module>`` (never each other through ``sys.path``):
:mod:`vlpc.benchmarking.seed`, the seed's SGEMM problem and the modeled-launch shortcuts.
"""
