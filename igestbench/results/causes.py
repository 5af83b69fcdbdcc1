"""The causes a result file may give for a check that did not pass, each with its meaning and hint.

The verification names a cause (:mod:`igestbench.verify.diagnosis` decides which, from the
exception a check raised); the report explains the same causes in the footnotes of the success
matrix, from the file alone. Both read this one table, so a cause reads alike in a terminal, a
result file and a campaign report.
"""

from __future__ import annotations

from igestbench import redaction
from igestbench.icat.faults import IcatExceptionType

#: How the reason of a skipped IDS check begins when the target serves no ICAT Data Service
#: (sv_tests/test_ids.py writes it, the report's IDS matrix reads it): "no IDS" is a fact about a
#: deployment, not a failure, and must read differently from an IDS that failed.
NO_IDS = "no IDS at"

MEANINGS: dict[str, tuple[str, str]] = {
    # cause: (what it means, what to do)
    "dns": ("the host name does not resolve", "check the name; a site may publish it only inside"),
    "refused": (
        "nothing accepts connections on that port",
        "check the port (ICAT runs on 443, often 8181) and that the service is up",
    ),
    "connect-timeout": (
        "no connection in time: nothing answered the attempt to connect",
        "a firewall likely drops the packets, or there is no route: ask the site to open the "
        "port to your address; check the host, the port and the route (traceroute)",
    ),
    "timeout": (
        "connected, but no complete answer in time",
        "the server is slow or overloaded: raise --timeout, or retry when it is quieter",
    ),
    "connection": (
        "the connection was closed in the middle of an exchange",
        "a proxy, load balancer or overloaded server: retry, then ask the site",
    ),
    "tls-self-signed": (
        "the server presents a self-signed certificate",
        "pass --ca-file with that certificate (or --insecure to skip the check), or ask the "
        "site for a certificate from a public CA",
    ),
    "tls-unknown-ca": (
        "the certificate is issued by a CA this client does not trust (a local CA?)",
        "pass --ca-file with the site's CA certificate (or --insecure to skip the check), "
        "or ask for one from a public CA",
    ),
    "tls-expired": (
        "the certificate is outside its validity period",
        "ask the site to renew the certificate (and check this machine's clock)",
    ),
    "tls-hostname": (
        "the certificate is for another host name",
        "use the name the certificate names, or ask the site to add this one to it",
    ),
    "tls-plain-http": (
        "the port does not speak TLS (plain HTTP?)",
        "use http:// for this port, or the port the site serves HTTPS on (usually 443)",
    ),
    "tls-handshake": (
        "TLS could not be negotiated",
        "the server may offer only old protocols or ciphers: ask the site for TLS 1.2 or later",
    ),
    "http-status": (
        "the web server answered with an HTTP status ICAT does not give",
        "check the path (normally /ICATService/ICAT) and that ICAT is deployed there",
    ),
    "not-icat": (
        "what answers there is not an ICAT SOAP service",
        "check the URL: <url>?wsdl must show ICAT's WSDL",
    ),
    "rest-missing": (
        "the catalogue answers over SOAP, but ICAT's REST API does not answer at /icat",
        "ICAT 5 and later serve REST at /icat/ on the host and port of /ICATService/: ask the "
        "site to let its proxy or firewall pass /icat/ as it passes /ICATService/",
    ),
    "auth-refused": (
        "the catalogue refused the login",
        "check the authenticator, user name and password (SV7_AUTH/SV7_USER/SV7_PASSWORD, "
        "SV7_PASSWORD_<ROLE>, sv7.toml [credentials] or --credentials)",
    ),
    "insufficient-privileges": (
        "the account may not do this",
        "ask the site for an account with write rules, or leave out the writer account",
    ),
    "wrong-result": (
        "the catalogue answered, but not what was expected",
        "check the expectation (e.g. counts in --reference-queries), then report it to the site",
    ),
    "ids-fault": (
        "the ICAT Data Service (/ids/) answered a call with an error",
        "the message names ids.server's exception (NotFound, Internal, DataNotOnline …): ask the "
        "site to look at the IDS's log, its storage and its connection to ICAT",
    ),
    "usage": ("the options or files given are unusable", "fix the option or file named"),
    "unexpected": (
        "the check itself failed unexpectedly",
        "rerun with --debug and report the traceback to the igestbench maintainers",
    ),
}
FAULT_HINT = "ICAT refused the request: the message says why; the server log may say more"

#: Every cause a diagnosis can name.
CAUSES: tuple[str, ...] = (
    *MEANINGS,
    *(f"icat-fault-{t.value}" for t in IcatExceptionType if t is not t.INSUFFICIENT_PRIVILEGES),
)

# OpenSSL's verify messages (1.1 and 3.x spellings), most specific first.
_TLS_MESSAGES: tuple[tuple[str, str], ...] = (
    ("self-signed certificate in certificate chain", "tls-unknown-ca"),
    ("self signed certificate in certificate chain", "tls-unknown-ca"),
    ("self-signed certificate", "tls-self-signed"),
    ("self signed certificate", "tls-self-signed"),
    ("certificate has expired", "tls-expired"),
    ("certificate is not yet valid", "tls-expired"),
    ("hostname mismatch", "tls-hostname"),
    ("ip address mismatch", "tls-hostname"),
    ("unable to get local issuer certificate", "tls-unknown-ca"),
    ("unable to get issuer certificate", "tls-unknown-ca"),
    ("unable to verify the first certificate", "tls-unknown-ca"),
    # what OpenSSL makes of a plain-HTTP answer to its ClientHello (1.1/3.0, then 3.2 and later)
    ("wrong version number", "tls-plain-http"),
    ("record layer failure", "tls-plain-http"),
    ("packet length too long", "tls-plain-http"),
)


def tls_cause(detail: str) -> str:
    """The TLS cause that OpenSSL's message in ``detail`` names."""
    text = detail.lower()
    return next((cause for key, cause in _TLS_MESSAGES if key in text), "tls-handshake")


def one_line(text: str, limit: int = 240) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def explain(cause: str, detail: str) -> tuple[str, str | None]:
    """(explanation, hint) of ``cause``: its meaning with the first line of ``detail`` after it.

    The detail goes into result files and reports, so it is scrubbed of secrets here.
    """
    detail = redaction.scrub(detail)
    meaning, hint = MEANINGS.get(cause, ("", FAULT_HINT))
    return (f"{meaning}: {one_line(detail)}" if meaning else one_line(detail)), hint
