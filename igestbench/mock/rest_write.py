"""ICAT's REST write (``POST /icat/entityManager``): create and update in one list, in one
transaction, with the semantics of icat.server 6.2.0's ``EntityBeanManager.write``.

* An object without ``id`` is created, with the one-to-many children it carries (as SOAP's
  ``create``); its id is returned.
* An object with ``id`` is updated: only the fields it names change (a null clears one), unlike
  SOAP's ``update``, which replaces every field; children it carries are created under it; a
  referenced object that names fields besides its id is updated as well. Its id is not returned.
* The whole list is rolled back when one object fails, and the fault's offset is that object's
  index in the list.
"""

from __future__ import annotations

from collections.abc import Sequence

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatError, IcatNoSuchObject
from igestbench.icat.schema import BASE_FIELD_NAMES, RelType
from igestbench.mock.service import IcatService


def write(service: IcatService, sid: str | None, beans: Sequence[Bean]) -> list[int]:
    """Create or update ``beans`` as the user of session ``sid``; the ids of those created."""
    user = service.sessions.user(sid)
    service.check_batch_size(len(beans))
    store = service.store
    ids: list[int] = []
    with store.transaction():
        for index, bean in enumerate(beans):
            try:
                if bean.id is None:
                    ids.append(service.create(sid, bean))
                else:
                    _update(service, sid, user, bean)
            except IcatError as exc:
                exc.offset = index
                raise
    return ids


def _update(service: IcatService, sid: str | None, user: str, bean: Bean) -> None:
    """Change the fields ``bean`` names on the stored object, then create its children."""
    profile = service.profile
    entity = profile.entity(bean.entity)
    obj_id = int(bean.id or 0)
    try:
        stored = service.reader.get(user, f"{entity.name} INCLUDE 1", obj_id, None)
    except IcatNoSuchObject:
        raise IcatNoSuchObject(f"{entity.name}[id:{obj_id}] not found.") from None
    merged: dict[str, object] = {"id": obj_id}
    for f in entity.fields:
        if f.rel is RelType.ATTRIBUTE and stored.get(f.name) is not None:
            merged[f.name] = stored[f.name]
        elif f.rel is RelType.ONE and isinstance(stored.get(f.name), Bean):
            merged[f.name] = Bean(f.type, {"id": stored[f.name].id})
    children: list[tuple[str, Bean]] = []
    changed = False
    for name, value in bean.values.items():
        if name in BASE_FIELD_NAMES:
            continue
        f = entity.field(name)
        if f.rel is RelType.MANY:
            children += [(f.mapped_by or "", child) for child in value or ()]
            continue
        changed = True
        if value is None:
            merged.pop(name, None)
        elif f.rel is RelType.ONE:
            if len(value.values) > 1:  # a reference that names more than its id: update it too
                _update(service, sid, user, value)
            merged[name] = Bean(f.type, {"id": value.id})
        else:
            merged[name] = value
    if changed:
        service.update(sid, Bean(entity.name, merged))
    for back, child in children:
        values = dict(child.values)
        if back:
            values[back] = Bean(entity.name, {"id": obj_id})
        service.create(sid, Bean(child.entity, values))
