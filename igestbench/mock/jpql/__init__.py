"""ICAT's query languages for the local catalogue: JPQL, concise and get syntax → SQLite SQL.

Queries are parsed with lark (``grammar.lark``) into :mod:`.syntax` trees, the concise syntax is
rewritten into the JPQL form, and one translator turns that into a single SQL statement with
bound parameters (never literal values in the SQL text), using the table layout of
:mod:`igestbench.mock.tables`. Every query ICAT would refuse raises
:class:`~igestbench.icat.faults.IcatBadParameter`. Compiled queries are cached.
"""

from igestbench.mock.jpql.compiler import compile_get, compile_ids, compile_search
from igestbench.mock.jpql.model import CompiledGet, CompiledSearch, IncludeNode
from igestbench.mock.jpql.parser import prepare as prepare_parser

__all__ = [
    "CompiledGet",
    "CompiledSearch",
    "IncludeNode",
    "compile_get",
    "compile_ids",
    "compile_search",
    "prepare_parser",
]
