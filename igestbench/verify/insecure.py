"""What ``sv7 check --insecure`` still holds against a certificate, and what it only says.

An operator who passes ``--insecure`` has told the probe not to verify the certificate: the
site knowingly runs a self-signed one, a local CA's, or one for another name (Payara's default
is for ``localhost``), and the probe's own calls go through without verification. A monitoring
probe that stays CRITICAL for that — or WARNING, a state that never changes — hides the real
outages behind a light that is always on, and an operator learns to ignore it. So, under
``--insecure`` only:

* what verification would have refused — a self-signed certificate, an unknown CA, another host
  name — is no failure; the OK line says it: ``ICAT OK - 6.2.0, login ok, … (certificate not
  verified: self-signed)``, so the choice stays visible in the monitoring system;
* a certificate outside its validity period is a WARNING (exit 1), not CRITICAL: the probe's
  calls still work, but every client that verifies fails and the site has something to renew
  (or a clock to set); the line gives the date and the days (``certificate has expired on
  2026-11-17 (10 days ago)``);
* everything else — a port that speaks plain HTTP, a handshake that fails, any other check —
  is judged as without ``--insecure``.

Without ``--insecure`` nothing is waived: an untrusted or expired certificate is CRITICAL, and
one the operator trusts with ``--ca-file`` that is self-signed a WARNING (the checks' own
severity).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from igestbench.verify.plugin import CheckRecord

#: Causes verification refuses and --insecure waives, with the words the OK line gives them.
NOT_VERIFIED = {
    "tls-self-signed": "self-signed",
    "tls-unknown-ca": "issued by a CA not trusted here",
    "tls-hostname": "for another host name",
}
#: Causes --insecure lowers to a WARNING: the certificate's dates, which no flag makes right.
OUT_OF_DATE = frozenset({"tls-expired"})


def waive(failed: Sequence[CheckRecord]) -> tuple[tuple[CheckRecord, ...], tuple[str, ...]]:
    """The failures that still count under ``--insecure`` (an out-of-date certificate's as
    warnings), and what was not verified, in the words of :data:`NOT_VERIFIED` (each once)."""
    counted: list[CheckRecord] = []
    unverified: list[str] = []
    for check in failed:
        cause = check.cause or ""
        if check.part != "tls":
            counted.append(check)
        elif cause in NOT_VERIFIED:
            if NOT_VERIFIED[cause] not in unverified:
                unverified.append(NOT_VERIFIED[cause])
        elif cause in OUT_OF_DATE:
            counted.append(dataclasses.replace(check, severity="warning"))
        else:
            counted.append(check)
    return tuple(counted), tuple(unverified)


def not_verified_note(unverified: Sequence[str]) -> str:
    """`` (certificate not verified: self-signed)``, or nothing."""
    return f" (certificate not verified: {', '.join(unverified)})" if unverified else ""
