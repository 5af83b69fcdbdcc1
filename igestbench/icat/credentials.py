"""What an ICAT login needs: an authenticator's mnemonic, a user name and a password.

ICAT's ``login(plugin, credentials)`` takes the mnemonic and a map of the authenticator's keys;
the authenticators of ICAT's own family (simple, db, ldap) ask for ``username`` and
``password``, and the user name ICAT then reports is ``mnemonic/username``. The client, the
service checks and the local catalogue all use this one value (the last two add a role, or
root rights); the password never shows in a repr.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Credentials:
    authenticator: str
    username: str
    password: str = field(repr=False)

    def as_login(self) -> dict[str, str]:
        """The ``credentials`` map of ICAT's login call."""
        return {"username": self.username, "password": self.password}

    @property
    def user_name(self) -> str:
        """The user name ICAT reports for this login: ``mnemonic/username``."""
        return f"{self.authenticator}/{self.username}"
