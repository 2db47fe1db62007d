"""The resource meter of one detector job: wall and CPU time, and memory, as provenance records them."""
from __future__ import annotations

import threading
import time


class Meter:
    """Wall time and memory of one job: RSS sampled every 10 ms in a side thread.

    The job also runs with one BLAS/OpenMP thread (threadpoolctl): the parallelism is across
    jobs, and histogram gradient boosting's OpenMP threads, left free, spin against the other
    worker (5x slower on two busy cores).
    """

    def __enter__(self) -> Meter:
        import psutil
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=1)

        self._proc = psutil.Process()
        self.start_rss = self.peak_rss = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self._t0 = time.perf_counter()
        self._c0 = time.thread_time()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak_rss = max(self.peak_rss, self._proc.memory_info().rss)

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._t0
        # CPU of this thread only: on a shared machine wall time measures the neighbours too.
        self.cpu_seconds = time.thread_time() - self._c0
        self._stop.set()
        self._thread.join()
        self.peak_rss = max(self.peak_rss, self._proc.memory_info().rss)
        self._limits.restore_original_limits()

    @property
    def grew_mb(self) -> float:
        """The most the process grew above its size at job start, in MiB."""
        return (self.peak_rss - self.start_rss) / 2**20

    @property
    def rss_mb(self) -> float:
        """The process's highest resident size during the job, in MiB."""
        return self.peak_rss / 2**20
