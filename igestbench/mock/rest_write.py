"""ICAT's REST write (``POST /icat/entityManager``): create and update in one list, in one
transaction, with the semantics of icat.server 6.2.0's ``EntityBeanManager.write``.

* An object without ``id`` is created, with the one-to-many children it carries (as SOAP's
  ``create``); its id is returned.
* An object with ``id`` is updated: only the fields it names change (a null clears one), unlike
  SOAP's ``update``, which replaces every field; children it carries are created under it; a
  referenced object that names fields besides its id is updated as well. Its id is not returned.
* A reference ``{"id": n}`` stands for the stored object (ICAT loads it), so a parameter whose
  type is referenced by id is checked against the stored type's ``applicableTo…`` flags, where
  SOAP's create reads the flags on the reference as sent.
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
    types: dict[int, Bean] = {}
    with store.transaction():
        for index, bean in enumerate(beans):
            try:
                if bean.id is None:
                    ids.append(service.create(sid, _loaded_types(service, user, bean, types)))
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
        child = _loaded_types(service, user, Bean(child.entity, values), {})
        service.create(sid, child)


def _loaded_types(service: IcatService, user: str, bean: Bean, types: dict[int, Bean]) -> Bean:
    """``bean`` with the ParameterType of every parameter in it as stored (not as referenced)."""
    entity = service.profile.entity(bean.entity)
    values = dict(bean.values)
    kind = values.get("type")
    if entity.base == "Parameter" and isinstance(kind, Bean) and kind.id is not None:
        type_id = int(kind.id)
        if type_id not in types:
            types[type_id] = service.reader.get(user, "ParameterType", type_id, None)
        values["type"] = types[type_id]
    for f in entity.manys:
        children = values.get(f.name)
        if children:
            values[f.name] = [_loaded_types(service, user, c, types) for c in children]
    return Bean(bean.entity, values)
