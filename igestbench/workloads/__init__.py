"""The four benchmark workloads of the original campaign, and the journal that cleans up after them.

1. :func:`run_full_cycle` — complete ingestion cycles with existence checks, per NeXus file;
2. :func:`run_single_queries` — many queries that each return one object;
3. :func:`run_burst` — many Datafiles into an existing Dataset, one by one and by createMany;
4. :func:`run_multi_query` — one query returning many results, whole and paged.
"""

from igestbench.workloads.base import WorkloadContext, WorkloadResult, WrongResult
from igestbench.workloads.burst import run_burst
from igestbench.workloads.full_cycle import run_full_cycle
from igestbench.workloads.journal import CatalogueIdentity, Journal, RunTag
from igestbench.workloads.journal_cleanup import cleanup
from igestbench.workloads.multi_query import RawSearch, run_multi_query
from igestbench.workloads.ownership import CleanupReport
from igestbench.workloads.single_query import run_single_queries

__all__ = [
    "CatalogueIdentity",
    "CleanupReport",
    "Journal",
    "RawSearch",
    "RunTag",
    "WorkloadContext",
    "WorkloadResult",
    "WrongResult",
    "cleanup",
    "run_burst",
    "run_full_cycle",
    "run_multi_query",
    "run_single_queries",
]
