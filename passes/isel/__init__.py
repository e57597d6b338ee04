"""Instruction selection: ``gemm.matmul`` into the ``gcn`` dialect (the ``convert-gemm-to-gcn`` pass and its kernel builders)."""
