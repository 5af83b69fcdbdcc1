"""The suite's own calls are repeated when lost — only those safe to repeat (client/repeats.py).

Tryout 4 #17: at ``sv7 serve --drop-rate 0.02`` one lost connection among the cleanup's many
searches stopped the run as "the target cannot be reached". A read, a login or a logout is
repeated; a delete of the run's own objects is confirmed by reading first; a create, createMany
or update is never repeated (a lost create may have been made). The pauses are not slept here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from igestbench.client.repeats import Repeating, RepeatPolicy, worth_repeating
from igestbench.client.transport import TransportCause, TransportFailure
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatInternal, IcatNoSuchObject, IcatSession
from igestbench.icat.query import Query

URL = "http://127.0.0.1:1/ICATService/ICAT"


def lost() -> TransportFailure:
    return TransportFailure(TransportCause.CONNECTION, URL, "Remote end closed connection")


class Flaky:
    """A catalogue whose next calls fail as ``failures`` says; it holds ``objects``."""

    flavour = "fake"

    def __init__(self, failures: Sequence[BaseException] = (), *, done_before_lost: bool = False):
        self.failures = list(failures)
        #: a delete whose connection is lost has deleted (the answer went missing, not the call)
        self.done_before_lost = done_before_lost
        self.calls: list[str] = []
        self.objects: set[tuple[str, int]] = {("Dataset", 1), ("Dataset", 2), ("Datafile", 3)}
        self.sessions = 0

    def _fail(self, name: str, work: Any = None) -> None:
        self.calls.append(name)
        if self.failures:
            failure = self.failures.pop(0)
            if self.done_before_lost and work is not None:
                work()
            raise failure
        if work is not None:
            work()

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        self._fail("login")
        self.sessions += 1

    def logout(self) -> None:
        def end() -> None:
            if not self.sessions:
                raise IcatSession("Unable to find user by sessionid")
            self.sessions -= 1

        self._fail("logout", end)

    def refresh(self) -> None:
        self._fail("refresh")

    def user_name(self) -> str:
        self._fail("user_name")
        return "simple/ingest"

    def version(self) -> str:
        return "6.2.0"

    def entity_names(self) -> list[str]:
        self._fail("entity_names")
        return ["Dataset"]

    def entity_info(self, name: str) -> Any:
        self._fail("entity_info")
        return None

    def search(self, query: str | Query) -> list[Any]:
        self._fail("search")
        text = str(query)
        return [i for e, i in sorted(self.objects) if f"FROM {e} " in text and str(i) in text]

    def get(self, query: str, obj_id: int) -> Bean:
        self._fail("get")
        return Bean("Dataset", {"id": obj_id})

    def create(self, bean: Bean) -> int:
        self._fail("create")
        return 9

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        self._fail("create_many")
        return [9]

    def update(self, bean: Bean) -> None:
        self._fail("update")

    def delete(self, bean: Bean) -> None:
        self.delete_many([bean])

    def delete_many(self, beans: Sequence[Bean]) -> None:
        def remove() -> None:
            for at, bean in enumerate(beans):
                if (bean.entity, bean.id) not in self.objects:
                    raise IcatNoSuchObject(f"{bean.entity}[id:{bean.id}] not found", at)
            for bean in beans:
                self.objects.discard((bean.entity, int(bean.id or 0)))

        self._fail("delete_many", remove)

    def close(self) -> None:
        pass


def repeating(inner: Flaky, tries: int = 4) -> tuple[Repeating, list[float]]:
    slept: list[float] = []
    return Repeating(inner, RepeatPolicy(tries=tries, sleep=slept.append)), slept  # type: ignore[arg-type]


def test_a_lost_read_is_repeated_with_a_growing_pause() -> None:
    inner = Flaky([lost(), lost(), IcatInternal("injected")])
    client, slept = repeating(inner)
    assert client.search("SELECT d FROM Dataset d WHERE d.id = 1") == [1]
    assert inner.calls == ["search"] * 4 and slept == [0.1, 0.4, 1.6]
    assert client.policy.repeated == 3


@pytest.mark.parametrize("name", ["login", "refresh", "user_name", "entity_names", "get"])
def test_every_read_and_the_login_are_repeated(name: str) -> None:
    inner = Flaky([lost()])
    client, _ = repeating(inner)
    call = {"login": lambda: client.login("simple", {}), "refresh": client.refresh,
            "user_name": client.user_name, "entity_names": client.entity_names,
            "get": lambda: client.get("Dataset", 1)}[name]  # fmt: skip
    call()
    assert inner.calls == [name, name]


def test_the_tries_are_bounded() -> None:
    inner = Flaky([lost()] * 10)
    client, slept = repeating(inner, tries=4)
    with pytest.raises(TransportFailure, match="connection lost"):
        client.entity_names()
    assert len(inner.calls) == 4 and len(slept) == 3


@pytest.mark.parametrize("cause", [TransportCause.REFUSED, TransportCause.TIMEOUT,
                                   TransportCause.CONNECT_TIMEOUT, TransportCause.TLS])  # fmt: skip
def test_a_failure_a_repeat_cannot_mend_is_raised_at_once(cause: TransportCause) -> None:
    inner = Flaky([TransportFailure(cause, URL, "no")])
    client, slept = repeating(inner)
    with pytest.raises(TransportFailure):
        client.search("SELECT d FROM Dataset d")
    assert inner.calls == ["search"] and slept == []


def test_a_gateway_status_is_worth_a_repeat_and_a_session_fault_is_not() -> None:
    assert worth_repeating(TransportFailure(TransportCause.HTTP_STATUS, URL, "HTTP 503", 503))
    assert not worth_repeating(TransportFailure(TransportCause.HTTP_STATUS, URL, "HTTP 404", 404))
    assert not worth_repeating(IcatSession("expired"))


@pytest.mark.parametrize("name", ["create", "create_many", "update"])
def test_a_write_is_never_repeated(name: str) -> None:
    """A create whose answer was lost may have been made: a second would make it twice."""
    inner = Flaky([lost()])
    client, slept = repeating(inner)
    bean = Bean("Dataset", {"name": "x"})
    call = {"create": lambda: client.create(bean),
            "create_many": lambda: client.create_many([bean]),
            "update": lambda: client.update(bean)}[name]  # fmt: skip
    with pytest.raises(TransportFailure):
        call()
    assert inner.calls == [name] and slept == [] and client.policy.repeated == 0


def test_a_lost_delete_that_went_through_is_confirmed_by_reading_not_sent_again() -> None:
    inner = Flaky([lost()], done_before_lost=True)
    client, _ = repeating(inner)
    client.delete_many([Bean("Dataset", {"id": 1}), Bean("Datafile", {"id": 3})])
    assert inner.calls == ["delete_many", "search", "search"]  # one read per entity, no delete
    assert inner.objects == {("Dataset", 2)}


def test_a_lost_delete_that_did_not_go_through_is_sent_again() -> None:
    inner = Flaky([lost()])
    client, _ = repeating(inner)
    client.delete(Bean("Dataset", {"id": 2}))
    assert inner.calls == ["delete_many", "search", "delete_many"]
    assert ("Dataset", 2) not in inner.objects


def test_a_logout_lost_after_it_ended_the_session_is_done() -> None:
    inner = Flaky([lost()], done_before_lost=True)
    inner.sessions = 1
    client, _ = repeating(inner)
    client.logout()  # the repeat meets "no such session": the lost one went through
    assert inner.calls == ["logout", "logout"] and inner.sessions == 0
    with pytest.raises(IcatSession):  # but a session gone before is said, as by the client
        repeating(Flaky())[0].logout()


def test_siblings_repeat_too_and_count_in_the_same_policy() -> None:
    class WithSibling(Flaky):
        def sibling(self) -> Flaky:
            return Flaky([lost()])

    client, _ = repeating(WithSibling())
    assert client.sibling is not None
    twin = client.sibling()
    assert twin.search("SELECT d FROM Dataset d WHERE d.id = 2") == [2]
    assert client.policy.repeated == 1
    assert repeating(Flaky())[0].sibling is None  # a client that has none: none
