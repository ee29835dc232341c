"""Benchmarks of dmlgraph against onnxruntime, run as ``python -m benchmarks``.

Sections: ``execution`` (single Slice/Concat/Pad nodes, GB/s against onnxruntime and a
2-thread memcpy bound), ``overhead`` (per-node cost of 1,000-node chains), ``lowering``
(load + lower against onnxruntime session creation, and scaling to 100k nodes) and ``memory``
(peak RSS of a run, one fresh process per engine). Every measurement of a row is taken in the
same process and run, so the numbers beside each other are comparable.
"""
