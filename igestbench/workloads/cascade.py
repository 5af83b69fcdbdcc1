"""What a delete takes with it on ICAT, and which Facility each object hangs below.

ICAT cascades a delete along every one-to-many relation (``@OneToMany(cascade = ALL)`` on each
of them in icat.server): deleting a Dataset deletes its Datafiles, and deleting a DatafileFormat
deletes every Datafile that names it — in any Facility. So before cleanup deletes an object it
must know everything below it, along every such relation (an :class:`Edge`).

Each entity with a way up to a Facility has one **primary path** there: the chain of required
many-to-one relations that says whose it is, taken from its uniqueness key where it can be
(``Datafile`` → ``dataset.investigation.facility``, ``DatafileParameter`` →
``datafile.dataset.investigation.facility``), the longest when several qualify, so that the
tree it spans nests as a facility's data does. An edge is *primary* when it is the first step of
its child's primary path; the primary edges from the run's Facilities span the run's tree. Every
other edge into an entity with a primary path (a DatafileFormat's Datafiles, a ParameterType's
parameters) is a *cross* edge: what it reaches belongs to whichever Facility its own primary
path leads to.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from igestbench.icat.schema import Profile


@dataclass(frozen=True)
class Edge:
    """A one-to-many relation ``parent.relation`` whose objects point back by ``child.inverse``."""

    parent: str
    relation: str
    child: str
    inverse: str


@functools.cache
def primary_path(profile: Profile, entity: str) -> tuple[str, ...] | None:
    """The many-to-one fields from ``entity`` up to its Facility; () for Facility; None if none."""
    if entity == "Facility":
        return ()
    if entity not in profile.entities:
        return None
    model = profile.entity(entity)
    key = list(model.constraint)
    best: tuple[str, ...] | None = None
    best_rank: tuple[int, int, int, str] | None = None
    for field in model.ones:
        if not field.not_null:
            continue
        above = primary_path(profile, field.type)
        if above is None:
            continue
        in_key = field.name in key
        # in the uniqueness key first, then the longest, then the key's order, then the name
        rank = (0 if in_key else 1, -len(above), key.index(field.name) if in_key else 0,
                field.name)  # fmt: skip
        if best_rank is None or rank < best_rank:
            best, best_rank = (field.name, *above), rank
    return best


def path_key(path: tuple[str, ...], attribute: str = "id") -> str:
    """``("dataset", "investigation")`` → ``"dataset.investigation.id"``: a Query path."""
    return ".".join((*path, attribute))


@functools.cache
def edges_from(profile: Profile, entity: str) -> tuple[Edge, ...]:
    """Every relation along which a delete of an ``entity`` cascades."""
    found = []
    for field in profile.entity(entity).manys:
        if field.mapped_by is not None:
            found.append(Edge(entity, field.name, field.type, field.mapped_by))
    return tuple(found)


@functools.cache
def edges_into(profile: Profile, entity: str) -> tuple[Edge, ...]:
    """Every relation along which a delete of another object cascades to an ``entity``."""
    return tuple(e for name in profile.entities for e in edges_from(profile, name)
                 if e.child == entity)  # fmt: skip


def is_primary(profile: Profile, edge: Edge) -> bool:
    """Whether ``edge`` is the first step of its child's primary path (a tree edge)."""
    path = primary_path(profile, edge.child)
    return bool(path) and path is not None and path[0] == edge.inverse
