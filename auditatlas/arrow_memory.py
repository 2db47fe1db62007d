"""Arrow's buffers from the C library's malloc, in every process that reads or writes a store.

pyarrow takes its buffers from its bundled mimalloc by default, which keeps freed buffers for
reuse instead of giving them back. Audit Atlas makes Arrow buffers in bulk and briefly: the
ingest's record batches, and every string column a query returns (pandas keeps strings in
Arrow). Measured with mimalloc: an ingest chunk peaked at 410 MB against 330 MB with malloc, a
receiver writing every second held ~100 MB more, and label doubt at a million rooms kept a
462 MB mimalloc region and peaked at 2.27 GB against 1.80 GB (``bench/README.md``); no slower.
"""
from __future__ import annotations


def use_system_allocator() -> None:
    """Switch this process's default Arrow pool to malloc. Buffers made before the switch stay
    with their own pool."""
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
