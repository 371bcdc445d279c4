"""The TLS client certificate's subject as mongod names it for MONGODB-X509 (RFC 2253:
the RDNs in reverse order, short attribute names, special characters escaped)."""

from __future__ import annotations

import ssl
from typing import Any

_SHORT_NAMES = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_SPECIAL = ',+"\\<>;'


def peer_subject(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The subject of the peer's verified certificate, or None (no TLS / no certificate)."""
    if ssl_object is None:
        return None
    certificate = ssl_object.getpeercert()
    if not certificate:
        return None
    return subject_string(certificate.get("subject", ()))


def subject_string(subject: Any) -> str | None:
    """RFC 2253 text of ``getpeercert()['subject']`` (a sequence of RDNs of (name, value))."""
    rdns = []
    for rdn in reversed(tuple(subject)):
        parts = [f"{_SHORT_NAMES.get(name, name)}={_escape(str(value))}" for name, value in rdn]
        rdns.append("+".join(parts))
    return ",".join(rdns) or None


def _escape(value: str) -> str:
    escaped = "".join(f"\\{ch}" if ch in _SPECIAL else ch for ch in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return escaped
