"""What a run records about where it ran and what it ran against, before measuring anything.

* host facts: OS, Python, CPU model, cores, memory, tool version;
* round-trip time to the target: ICMP echo where this machine permits it (root, or a kernel that
  allows unprivileged ICMP sockets), else the time to open a TCP connection to the service port —
  the result says which, since the two are not the same measure;
* HTTP(S): whether the WSDL answers, and with what status;
* TLS: protocol version, subject, issuer, expiry, self-signed or not, and whether it verified
  with the trust the run uses.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
import ssl
import statistics
import time
from typing import Any

import icmplib
import psutil
import requests
from cryptography import x509

from igestbench import __version__
from igestbench.client import ClientConfig
from igestbench.client.deadline import bound_tls, budget, create_connection
from igestbench.client.transport import (
    TransportCause,
    call_budget,
    classify,
    http_session,
    timeouts,
)
from igestbench.icat.endpoint import Endpoint, endpoint_of

RTT_SAMPLES = 5


def host_facts() -> dict[str, Any]:
    return {
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
        "cores": psutil.cpu_count(logical=True),
        "memory_bytes": psutil.virtual_memory().total,
        "hostname": socket.gethostname(),
        "tool_version": __version__,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def round_trip(
    host: str, port: int, samples: int = RTT_SAMPLES, timeout: float = 5.0
) -> dict[str, Any]:
    """RTT samples in ms, by ICMP if permitted, else by TCP connect; ``method`` says which.

    A TCP connect that times out ends the sampling: a firewall that drops the packets would
    make every sample wait as long (``timeout`` each).
    """
    for privileged in (False, True):
        if privileged and os.geteuid() != 0:
            break
        try:
            reply = icmplib.ping(
                host, count=samples, interval=0.05, timeout=1, privileged=privileged
            )
        except (icmplib.ICMPLibError, OSError):
            continue
        if reply.is_alive:
            return _rtt("icmp", list(reply.rtts))
        break  # ICMP allowed but unanswered (filtered): fall back to TCP
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=timeout):
                times.append((time.perf_counter() - start) * 1000)
        except TimeoutError:
            break
        except OSError:
            continue
    return _rtt("tcp", times)


def _rtt(method: str, samples_ms: list[float]) -> dict[str, Any]:
    return {
        "method": method,
        "samples_ms": [round(s, 3) for s in samples_ms],
        "median_ms": round(statistics.median(samples_ms), 3) if samples_ms else None,
    }


def tls_facts(endpoint: Endpoint, config: ClientConfig) -> dict[str, Any] | None:
    """The server certificate and whether it verifies with the trust this run uses."""
    if endpoint.scheme != "https":
        return None
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    facts: dict[str, Any] = {}
    try:
        with (
            budget(call_budget(config)),
            create_connection((endpoint.host, endpoint.port), timeout=config.read_timeout) as s,
            bound_tls(unverified).wrap_socket(s, server_hostname=endpoint.host) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
            facts["version"] = tls.version()
    except OSError as exc:
        return {"error": str(exc)}
    if der:
        cert = x509.load_der_x509_certificate(der)
        facts.update(
            {
                "subject": cert.subject.rfc4514_string(),
                "issuer": cert.issuer.rfc4514_string(),
                "not_after": cert.not_valid_after_utc.isoformat(),
                "expired": cert.not_valid_after_utc < dt.datetime.now(dt.UTC),
                "self_signed": cert.issuer == cert.subject,
            }
        )
    facts["verified"], facts["verify_error"] = _verifies(endpoint, config)
    return facts


def _verifies(endpoint: Endpoint, config: ClientConfig) -> tuple[bool, str | None]:
    if config.insecure:
        return False, "not checked (--insecure)"
    ca = str(config.ca_file) if config.ca_file else None
    context = ssl.create_default_context(cafile=ca)
    try:
        with (
            budget(call_budget(config)),
            create_connection((endpoint.host, endpoint.port), timeout=config.read_timeout) as s,
            bound_tls(context).wrap_socket(s, server_hostname=endpoint.host),
        ):
            return True, None
    except ssl.SSLCertVerificationError as exc:
        return False, exc.verify_message or str(exc)
    except (ssl.SSLError, OSError) as exc:
        return False, str(exc)


def http_facts(endpoint: Endpoint, config: ClientConfig) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        # the clients' own session: the run's trust (not REQUESTS_CA_BUNDLE's), and with
        # --insecure no urllib3 warning on every request; the whole answer within --timeout
        with (
            budget(call_budget(config)) as limit,
            http_session(config, endpoint, pool_size=1) as session,
        ):
            response = session.get(endpoint.wsdl_url, timeout=timeouts(config))
    except requests.RequestException as exc:
        cause = classify(exc, endpoint.wsdl_url).cause
        if cause is TransportCause.CONNECT_TIMEOUT:  # a firewall, not a slow server
            error = cause.value
        else:
            error = "timeout" if limit.expired else type(exc).__name__
        return {"status": None, "wsdl_ok": False, "error": error}
    return {
        "status": response.status_code,
        "wsdl_ok": response.status_code == 200 and b"ICATService" in response.content,
        "wsdl_ms": round((time.perf_counter() - start) * 1000, 3),
        "bytes": len(response.content),
    }


def target_of(config: ClientConfig) -> dict[str, Any]:
    """The result file's first ``target`` section: what the address says (no network)."""
    endpoint = endpoint_of(config.url)
    return {
        "url": endpoint.service_url,
        "host": endpoint.host,
        "port": endpoint.port,
        "scheme": endpoint.scheme,
    }


def probe_facts(config: ClientConfig) -> dict[str, Any]:
    """The ``probe`` section: round-trip time, HTTP(S) and TLS, with the trust the run uses."""
    endpoint = endpoint_of(config.url)
    return {
        "rtt": round_trip(endpoint.host, endpoint.port, timeout=min(5.0, config.connect_timeout)),
        "http": http_facts(endpoint, config),
        "tls": tls_facts(endpoint, config),
    }


def probe(config: ClientConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(target section, probe section) of the result file, with the trust the run uses."""
    return target_of(config), probe_facts(config)


def probe_summary(facts: dict[str, Any]) -> str:
    """One line of what the probe found: ``rtt 0.1 ms (tcp), WSDL HTTP 200, TLS verified``."""
    rtt = facts["rtt"]
    parts = [f"rtt {rtt['median_ms']} ms ({rtt['method']})" if rtt["median_ms"] is not None
             else f"no rtt ({rtt['method']})"]  # fmt: skip
    http = facts["http"]
    parts.append(f"WSDL HTTP {http['status']}" if http["status"] is not None
                 else f"WSDL {http.get('error', 'no answer')}")  # fmt: skip
    tls = facts["tls"]
    if tls is not None:
        parts.append("TLS verified" if tls.get("verified") else "TLS not verified")
    return ", ".join(parts)
