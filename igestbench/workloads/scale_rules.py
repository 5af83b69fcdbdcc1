"""ICAT's usual membership rules, each restricted to one Facility, for the scale part's member.

Facilities let a user read what belongs to the Investigations they are an InvestigationUser of:
a Rule per entity type below Investigation, ``… JOIN i.investigationUsers iu JOIN iu.user u
WHERE u.name = :user``. On the built-in catalogue the scale part adds these rules itself, each
with one more condition, ``f.name = '<the run's Facility>'``, so that they grant nothing outside
the run's own tree (the member's InvestigationUser rows elsewhere included); they are journaled
and removed by the run's cleanup like everything it creates (the Facility's name, hence the run
tag, is in their ``what``). Against a partner's catalogue no rule is ever added: the facility's
own rules decide what its member reads.
"""

from __future__ import annotations

from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from igestbench.workloads.journal import Journal

#: entity → (alias, the JOINs from it up to its Investigation ``i``)
_PATHS: dict[str, tuple[str, str]] = {
    "Investigation": ("i", ""),
    "InvestigationUser": ("x", "JOIN x.investigation i"),
    "Dataset": ("ds", "JOIN ds.investigation i"),
    "Datafile": ("df", "JOIN df.dataset ds JOIN ds.investigation i"),
    "DatafileParameter": ("p", "JOIN p.datafile df JOIN df.dataset ds JOIN ds.investigation i"),
    "DatasetParameter": ("p", "JOIN p.dataset ds JOIN ds.investigation i"),
}
MEMBERSHIP_ENTITIES = tuple(_PATHS)


def membership_rule(entity: str, facility: str) -> str:
    """The ``what`` of the READ rule on ``entity`` for members of ``facility``'s Investigations.

    ``facility`` is a run tag (letters, digits and ``-``): nothing in it needs quoting.
    """
    alias, joins = _PATHS[entity]
    return (f"SELECT {alias} FROM {entity} {alias} {joins} JOIN i.investigationUsers m "
            f"JOIN m.user u JOIN i.facility f WHERE u.name = :user AND f.name = '{facility}'"
            ).replace("  ", " ")  # fmt: skip


def add_membership_rules(catalogue: Catalogue, journal: Journal, facility: str) -> list[int]:
    """Create the READ rules (no grouping: whoever is a member), journaled; their ids."""
    beans = [
        Bean("Rule", {"what": membership_rule(entity, facility), "crudFlags": "R"})
        for entity in MEMBERSHIP_ENTITIES
    ]
    ids = catalogue.create_many(beans)
    journal.add_many("Rule", ids)
    return ids
