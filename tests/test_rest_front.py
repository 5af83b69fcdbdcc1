"""The REST front of the local catalogue on the wire (no client library between): the shapes,
status codes, error bodies and CORS headers of icat.server 6.2.0's ICATRest.

Behaviour taken from icat.server's source at tag v6.2.0 (ICATRest.java, IcatExceptionMapper,
NotFoundExceptionMapper, ThrowableExceptionMapper, CORSResponseFilter, EntityBeanManager.write)
and icat.authentication's IcatException (the status of each type).
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
import requests

from igestbench.config import FaultKnobs, ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import call, login, returns
from tests.test_catalogue_no_stall import FIVE_HOPS, second_client, serving

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, DELETE, PUT",
}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
ICAT_DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$")


class Rest:
    """Raw calls to ``/icat/...`` of one catalogue."""

    def __init__(self, cat: LocalCatalogue) -> None:
        self.base = cat.rest_url + "/"

    def get(self, path: str, **params: Any) -> requests.Response:
        return requests.get(self.base + path, params=params, timeout=10)

    def post(self, path: str, **form: Any) -> requests.Response:
        return requests.post(self.base + path, data=form, timeout=10)

    def put(self, path: str) -> requests.Response:
        return requests.put(self.base + path, timeout=10)

    def delete(self, path: str, **params: Any) -> requests.Response:
        return requests.delete(self.base + path, params=params, timeout=10)

    def login(self, user: str = "root") -> str:
        spec = {"plugin": "simple", "credentials": [{"username": user}, {"password": user}]}
        r = self.post("session", json=json.dumps(spec))
        assert r.status_code == 200, r.text
        return str(r.json()["sessionId"])

    def write(self, sid: str, entities: Any) -> requests.Response:
        return self.post("entityManager", sessionId=sid, entities=json.dumps(entities))

    def search(self, sid: str, query: str, **more: Any) -> requests.Response:
        return self.get("entityManager", sessionId=sid, query=query, **more)


@pytest.fixture()
def rest(fresh_catalogue: LocalCatalogue) -> Rest:
    return Rest(fresh_catalogue)


@pytest.fixture()
def root(rest: Rest) -> Iterator[str]:
    yield rest.login()


def error(r: requests.Response) -> tuple[int, str, str, int | None]:
    body = r.json()
    assert set(body) <= {"code", "message", "offset"}, body
    # ICAT's NotFoundExceptionMapper (501, a path it does not serve) sets no type
    assert r.headers.get("Content-Type") == (None if r.status_code == 501 else "application/json")
    return r.status_code, body["code"], body["message"], body.get("offset")


def facility_with_types(rest: Rest, sid: str) -> dict[str, int]:
    r = rest.write(sid, [{"Facility": {"name": "ESRF"}}])
    (facility,) = r.json()
    ref = {"id": facility}
    r = rest.write(
        sid,
        [
            {"InvestigationType": {"name": "exp", "facility": ref}},
            {"DatasetType": {"name": "raw", "facility": ref}},
            {
                "ParameterType": {
                    "name": "temperature",
                    "units": "K",
                    "valueType": "NUMERIC",
                    "applicableToDataset": True,
                    "facility": ref,
                }
            },
        ],
    )
    inv_type, ds_type, p_type = r.json()
    return {"facility": facility, "inv_type": inv_type, "ds_type": ds_type, "p_type": p_type}


# --- metadata, sessions, CORS ------------------------------------------------------------------


def test_version_and_properties(rest: Rest) -> None:
    # HEAD answers the headers of GET and no body, so a pipelined GET follows at once
    address = urlsplit(rest.base)
    with socket.create_connection((address.hostname or "", address.port or 80), 10) as conn:
        path = address.path + "version"
        conn.sendall(
            f"HEAD {path} HTTP/1.1\r\nHost: h\r\n\r\nGET {path} HTTP/1.1\r\n".encode()
            + b"Host: h\r\nConnection: close\r\n\r\n"
        )
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    head, _, rest_of_it = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and rest_of_it.startswith(b"HTTP/1.1 200")
    assert rest_of_it.endswith(b'{"version":"6.2.0"}')
    r = rest.get("version")
    assert r.status_code == 200 and r.json() == {"version": "6.2.0"}
    assert r.text == '{"version":"6.2.0"}'  # Java's JsonGenerator: no spaces
    props = rest.get("properties").json()
    assert props["maxEntities"] == 10000 and props["lifetimeMinutes"] == 120
    assert props["containerType"] == "Glassfish"
    (simple,) = props["authenticators"]
    assert simple == {  # no authn.simple.friendly, as a real ICAT deployed without it
        "mnemonic": "simple",
        "keys": [{"name": "username"}, {"name": "password", "hide": True}],
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "version"), ("GET", "entityManager"), ("GET", "no/such/thing"), ("PUT", "version")],
)
def test_every_answer_has_icat_cors_headers(rest: Rest, method: str, path: str) -> None:
    r = requests.request(method, rest.base + path, timeout=10)
    for name, value in CORS.items():
        assert r.headers[name] == value


def test_session_lifecycle(rest: Rest) -> None:
    sid = rest.login()
    info = rest.get(f"session/{sid}").json()
    assert info["userName"] == "simple/root" and 119 < info["remainingMinutes"] <= 120
    assert rest.get("user/simple/root").json() == {"loggedIn": True}
    assert rest.get("user/simple/reader").json() == {"loggedIn": False}
    r = rest.put(f"session/{sid}")
    assert r.status_code == 204 and r.content == b""
    assert rest.delete(f"session/{sid}").status_code == 204
    status, code, message, offset = error(rest.get(f"session/{sid}"))
    assert (status, code, offset) == (403, "SESSION", None)
    assert message == f"Unable to find user by sessionid: {sid}"


@pytest.mark.parametrize(
    ("json_text", "status", "code", "message"),
    [
        (None, 400, "BAD_PARAMETER", "json must not be null"),
        (
            '{"plugin":"simple","credentials":[{"username":"root"},{"password":"no"}]}',
            403,
            "SESSION",
            "The username and password do not match ",
        ),
        (
            '{"plugin":"ldap","credentials":[{"username":"root"},{"password":"root"}]}',
            403,
            "SESSION",
            "Authenticator mnemonic ldap not recognised",
        ),
    ],
)
def test_login_failures(
    rest: Rest, json_text: str | None, status: int, code: str, message: str
) -> None:
    body = "" if json_text is None else urlencode({"json": json_text})
    r = requests.post(rest.base + "session", data=body, headers=FORM, timeout=10)
    assert error(r) == (status, code, message, None)


def test_expired_rest_session_is_refused_like_a_soap_one() -> None:
    with LocalCatalogue(ServeConfig(lifetime_minutes=0.0005)) as cat:  # 30 ms
        rest = Rest(cat)
        sid = rest.login()
        time.sleep(0.1)
        assert rest.get("user/simple/root").json() == {"loggedIn": False}
        status, code, message, _ = error(rest.search(sid, "Facility"))
        assert (status, code) == (403, "SESSION") and "expired" in message
        soap_sid = login(cat.service_url)
        time.sleep(0.1)
        status, code, message, _ = error(rest.get(f"session/{soap_sid}"))
        assert (status, code) == (403, "SESSION") and "expired" in message


def test_a_session_works_across_soap_and_rest(fresh_catalogue: LocalCatalogue) -> None:
    rest = Rest(fresh_catalogue)
    url = fresh_catalogue.service_url
    soap_sid = login(url)
    assert rest.get(f"session/{soap_sid}").json()["userName"] == "simple/root"
    assert rest.write(soap_sid, [{"Facility": {"name": "F"}}]).status_code == 200
    rest_sid = rest.login()
    answer = call(url, "getUserName", f"<sessionId>{rest_sid}</sessionId>")
    assert returns(answer)[0].text == "simple/root"
    assert rest.delete(f"session/{soap_sid}").status_code == 204
    assert "SESSION" in call(url, "getUserName", f"<sessionId>{soap_sid}</sessionId>").text


# --- entityManager -------------------------------------------------------------------------


def test_answers_have_icat_shapes(rest: Rest, root: str) -> None:
    ids = facility_with_types(rest, root)
    r = rest.search(root, "SELECT f FROM Facility f")
    ((only,),) = [item.keys() for item in r.json()]
    assert only == "Facility"
    body = r.json()[0]["Facility"]
    assert list(body)[:5] == ["id", "createId", "createTime", "modId", "modTime"]
    assert ICAT_DATE.match(body["createTime"]) and body["createTime"].endswith("Z")
    assert body["investigations"] == [] and body["name"] == "ESRF"  # not INCLUDEd: empty
    assert "fullName" not in body  # null: left out
    got = rest.search(root, "Facility", id=ids["facility"]).json()
    assert got["Facility"]["id"] == ids["facility"]
    rows = rest.search(
        root, "SELECT pt.name, pt.valueType, pt.applicableToDataset FROM ParameterType pt"
    )
    assert rows.json() == [["temperature", "NUMERIC", True]]
    assert rest.search(root, "SELECT COUNT(f) FROM Facility f").json() == [1]
    # JPA's row of nulls for an aggregate over nothing, written as null by ICATRest.search
    assert rest.search(root, "SELECT MAX(f.id) FROM Facility f WHERE f.id < 0").json() == [None]


def test_write_creates_nested_children_and_updates_named_fields(rest: Rest, root: str) -> None:
    ids = facility_with_types(rest, root)
    investigation = {
        "name": "MX-1",
        "visitId": "1",
        "title": "Proteins",
        "startDate": "2024-03-03T10:00:00.250+01:00",
        "facility": {"id": ids["facility"]},
        "type": {"id": ids["inv_type"]},
        "datasets": [
            {
                "name": "run-1",
                "complete": False,
                "type": {"id": ids["ds_type"]},
                "datafiles": [{"name": f"f{i}.nxs", "fileSize": 10} for i in range(3)],
                "parameters": [{"type": {"id": ids["p_type"]}, "numericValue": 4.2}],
            }
        ],
    }
    r = rest.write(root, [{"Investigation": investigation}])
    assert r.status_code == 200, r.text
    (inv_id,) = r.json()
    query = "SELECT i FROM Investigation i INCLUDE i.datasets.datafiles, i.datasets.parameters"
    (found,) = rest.search(root, query).json()
    inv = found["Investigation"]
    assert inv["startDate"] == "2024-03-03T09:00:00.250Z"  # the same instant, in the server's zone
    (dataset,) = inv["datasets"]
    assert sorted(df["name"] for df in dataset["datafiles"]) == ["f0.nxs", "f1.nxs", "f2.nxs"]
    assert dataset["parameters"][0]["numericValue"] == 4.2
    # an update names what changes, a null clears; new children come with it; no id returned
    update = {
        "Investigation": {
            "id": inv_id,
            "title": "Renamed",
            "startDate": None,
            "datasets": [{"name": "run-2", "type": {"id": ids["ds_type"]}}],
        }
    }
    r = rest.write(root, [update, {"Facility": {"name": "ILL"}}])
    assert r.status_code == 200 and len(r.json()) == 1  # only the created Facility's id
    (after,) = rest.search(root, "SELECT i FROM Investigation i INCLUDE i.datasets").json()
    after = after["Investigation"]
    assert after["title"] == "Renamed" and after["visitId"] == "1" and "startDate" not in after
    assert sorted(d["name"] for d in after["datasets"]) == ["run-1", "run-2"]


def test_delete_is_all_or_nothing(rest: Rest, root: str) -> None:
    ids = facility_with_types(rest, root)
    gone = [{"DatasetType": {"id": ids["ds_type"]}}, {"DatasetType": {"id": 999999}}]
    status, code, _, offset = error(
        rest.delete("entityManager", sessionId=root, entities=json.dumps(gone))
    )
    assert (status, code, offset) == (404, "NO_SUCH_OBJECT_FOUND", 1)
    assert rest.search(root, "SELECT COUNT(t) FROM DatasetType t").json() == [1]
    r = rest.delete("entityManager", sessionId=root, entities=json.dumps(gone[:1]))
    assert r.status_code == 204 and r.content == b""
    assert rest.search(root, "SELECT COUNT(t) FROM DatasetType t").json() == [0]


def test_error_cases_answer_icat_status_and_code(rest: Rest, root: str) -> None:
    """Each IcatException type with the status icat.server's IcatExceptionMapper gives it."""
    ids = facility_with_types(rest, root)
    reader = rest.login("reader")
    facility = {"id": ids["facility"]}
    cases: list[tuple[requests.Response, int, str, int | None]] = [
        (rest.search("not-a-session", "Facility"), 403, "SESSION", None),
        (rest.search(root, "SELECT x FROM Nothing x"), 400, "BAD_PARAMETER", None),
        (rest.search(root, "Facility", id=999999), 404, "NO_SUCH_OBJECT_FOUND", None),
        (rest.search(reader, "Facility", id=ids["facility"]), 403, "INSUFFICIENT_PRIVILEGES", None),
        (rest.write(reader, [{"Facility": {"name": "X"}}]), 403, "INSUFFICIENT_PRIVILEGES", 0),
        (
            rest.write(root, [{"Facility": {"name": "ok"}}, {"Dataset": {"name": "no parent"}}]),
            412,
            "VALIDATION",
            1,
        ),
        (
            rest.write(root, [{"DatasetType": {"name": "raw", "facility": facility}}]),
            412,
            "OBJECT_ALREADY_EXISTS",
            0,
        ),
        (rest.write(root, [{"Nothing": {"name": "x"}}]), 400, "BAD_PARAMETER", 0),
        (rest.write(root, [{"Facility": {"colour": "red"}}]), 400, "BAD_PARAMETER", 0),
        (rest.write(root, "[{"), 400, "BAD_PARAMETER", 0),
        (rest.search(root, "Facility", id="x"), 500, "INTERNAL", None),
        (rest.search(root, "Facility", id=str(10**30)), 500, "INTERNAL", None),
        (rest.get("lucene/data", sessionId=root), 501, "NOT_IMPLEMENTED", None),
        (rest.put("version"), 500, "INTERNAL", None),
        (rest.get("entityManager", sessionId=root), 400, "BAD_PARAMETER", None),
    ]
    for response, status, code, offset in cases:
        got = error(response)
        assert (got[0], got[1], got[3]) == (status, code, offset), (response.request.url, got)
    assert rest.search(root, "SELECT COUNT(f) FROM Facility f WHERE f.name = 'ok'").json() == [0]


def test_dates_are_given_in_the_server_zone() -> None:
    with LocalCatalogue(ServeConfig(timezone="Europe/Paris")) as cat:
        rest = Rest(cat)
        sid = rest.login()
        rest.write(sid, [{"Facility": {"name": "F"}}])
        (facility,) = rest.search(sid, "Facility").json()
        assert re.search(r"\.\d{3}\+0[12]:00$", facility["Facility"]["createTime"])
        ids = rest.write(
            sid,
            [
                {
                    "FacilityCycle": {
                        "name": "2024-1",
                        "startDate": "2024-01-15T08:00:00.000Z",
                        "facility": {"id": facility["Facility"]["id"]},
                    }
                }
            ],
        ).json()
        got = rest.search(sid, "FacilityCycle", id=ids[0]).json()
        assert got["FacilityCycle"]["startDate"] == "2024-01-15T09:00:00.000+01:00"
        # ICAT parses written dates with its own pattern: milliseconds and zone required
        bad = rest.write(
            sid,
            [
                {
                    "FacilityCycle": {
                        "name": "2024-2",
                        "startDate": "2024-01-15T08:00:00",
                        "facility": {"id": facility["Facility"]["id"]},
                    }
                }
            ],
        )
        assert error(bad)[:2] == (400, "BAD_PARAMETER")


def test_icat_43_has_no_rest_api(catalogue_43: LocalCatalogue) -> None:
    r = requests.get(catalogue_43.url + "/icat/version", timeout=10)
    assert r.status_code == 404


def test_misbehaviour_knobs_apply_to_rest_too() -> None:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(error_rate=1.0))) as cat:
        status, code, message, offset = error(Rest(cat).get("version"))
        assert (status, code, offset) == (500, "INTERNAL", None) and "injected" in message
    dropping = ServeConfig(knobs=FaultKnobs(drop_rate=1.0))
    with LocalCatalogue(dropping) as cat, pytest.raises(requests.ConnectionError):
        Rest(cat).get("version")


def test_a_rest_query_runs_off_the_event_loop_within_its_time_budget() -> None:
    """The same path as a SOAP search: moved to a worker when its SQL takes long, stopped by
    --query-timeout with ICAT's INTERNAL, while other clients keep being answered."""
    with serving(query_timeout_s=2.0) as cat:
        rest = Rest(cat)
        sid = rest.login()
        with second_client(cat):
            began = time.monotonic()
            r = requests.get(
                rest.base + "entityManager",
                params={"sessionId": sid, "query": FIVE_HOPS},
                timeout=60,
            )
            took = time.monotonic() - began
        status, code, message, _ = error(r)
        assert (status, code) == (500, "INTERNAL") and "--query-timeout (2 s)" in message
        assert took < 30  # stopped at its budget: the query runs for hours (generous: load)
        assert rest.search(sid, "SELECT COUNT(df) FROM Datafile df").json() == [200]


def test_a_write_of_more_objects_than_the_budget_is_refused_before_parsing() -> None:
    with LocalCatalogue(ServeConfig(max_elements=1000)) as cat:
        rest = Rest(cat)
        sid = rest.login()
        braces_in_strings = [{"Facility": {"name": f"{i}" + "{" * 200}} for i in range(15)]
        assert rest.write(sid, braces_in_strings).status_code == 200  # strings hold no objects
        wide = {"name": "i", "datasets": [{"name": f"d{i}"} for i in range(1500)]}
        status, code, message, _ = error(rest.write(sid, [{"Investigation": wide}]))
        assert (status, code) == (400, "BAD_PARAMETER") and "--max-elements" in message
        nested = "[" * 100_000 + "]" * 100_000  # deeper than Python's parser goes
        status, code, message, _ = error(rest.post("entityManager", sessionId=sid, entities=nested))
        # what a real ICAT 6.2.0 answers (fixtures/icat-6.2/exchanges/rest-write-deep.json)
        assert (status, code) == (500, "INTERNAL") and "EJBException" in message
