"""The ``Catalogue`` protocol every client flavour implements, and the client configuration.

Flavours (zeep — ours, python-icat, and the lean load path) all speak in
:class:`igestbench.icat.beans.Bean` objects and raise the exceptions of
:mod:`igestbench.icat.faults` (ICAT faults) and :class:`igestbench.errors.TransportError`
(everything that is not an answer from ICAT), so workloads and checks never see which library is
underneath. A client keeps its session id to itself: no method returns it and no message or
``repr`` contains it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from igestbench.icat.beans import Bean
from igestbench.icat.entity_info import EntityInfo
from igestbench.icat.query import Query


@dataclass(frozen=True)
class ClientConfig:
    """How to reach one catalogue."""

    #: Service URL (``https://host/ICATService/ICAT``), WSDL URL, or ``host[:port]``.
    url: str
    #: The longest a connection may take to open.
    connect_timeout: float = 10.0
    #: The longest one call may take — connecting, sending and the whole answer (``--timeout``;
    #: :mod:`igestbench.client.deadline`) — and so each wait for data within it.
    read_timeout: float = 60.0
    #: PEM file of the CA(s) to trust instead of the system store.
    ca_file: Path | None = None
    #: Skip certificate verification; only ever set by an explicit ``--insecure``.
    insecure: bool = False
    #: Where the zeep flavour caches WSDL/XSD between runs (None: the user cache directory).
    cache_dir: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Catalogue(Protocol):
    """One logged-in (or not yet logged-in) connection to an ICAT catalogue."""

    #: "zeep", "python-icat", "lean" or "rest".
    flavour: str

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None: ...

    def logout(self) -> None: ...

    def refresh(self) -> None: ...

    def user_name(self) -> str: ...

    def version(self) -> str: ...

    def entity_names(self) -> list[str]: ...

    def entity_info(self, name: str) -> EntityInfo: ...

    def search(self, query: str | Query) -> list[Any]: ...

    def get(self, query: str, obj_id: int) -> Bean: ...

    def create(self, bean: Bean) -> int: ...

    def create_many(self, beans: Sequence[Bean]) -> list[int]: ...

    def update(self, bean: Bean) -> None: ...

    def delete(self, bean: Bean) -> None: ...

    def delete_many(self, beans: Sequence[Bean]) -> None: ...

    def close(self) -> None: ...
