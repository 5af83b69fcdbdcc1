"""Result files: one versioned JSON document per run, written atomically, read with clear errors.

The layout is the contract in ``layout.md`` beside this package; :mod:`.format` holds it as data
(version history beside ``FORMAT_VERSION``), :mod:`.writer` is the one owner that writes a run's
file, :mod:`.loader` reads files of every supported version.
"""

from igestbench.results.figures import SummaryRow, format_value, summary_rows
from igestbench.results.format import (
    CHECKED_METADATA,
    FORMAT_NAME,
    FORMAT_VERSION,
    STATUSES,
    ResultFileError,
    parse_timestamp,
    utc_timestamp,
)
from igestbench.results.loader import Identity, ResultFile, load_result, result_from_document
from igestbench.results.writer import ResultWriter, SecretInResultError, result_file_name

__all__ = [
    "CHECKED_METADATA",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "STATUSES",
    "Identity",
    "ResultFile",
    "ResultFileError",
    "ResultWriter",
    "SecretInResultError",
    "SummaryRow",
    "format_value",
    "load_result",
    "parse_timestamp",
    "result_file_name",
    "result_from_document",
    "summary_rows",
    "utc_timestamp",
]
