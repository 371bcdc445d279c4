"""What the KMS tests share: test certificates (the common set plus an expired server
certificate from the same CA), a GCP service-account key, the simulated KMS servers with
their credentials, and the providers and master keys that point at them."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from asyncmongo.testing.kms import AwsKms, AzureKms, GcpKms, KmipKms
from tests.support import certs

AWS_KEY_ID = "AKIASIMULATED"
AWS_SECRET = "simulated-secret"
AZURE_TENANT, AZURE_CLIENT, AZURE_SECRET = "tenant", "client-id", "client-secret"
GCP_EMAIL = "csfle@simulated.iam.gserviceaccount.com"
AWS_ARN = "arn:aws:kms:us-east-1:579766882180:key/89fcc2c4-08b0-4bd9-9f25-e30687b580d0"


@dataclass(frozen=True)
class KmsCerts:
    files: certs.CertFiles
    expired: Path  # a server certificate (and key) for 127.0.0.1 that expired yesterday
    gcp_private_key: str  # base64 PKCS#8 DER, as the gcp provider takes it

    def context(self, cert: Path | None = None,
                require_client_cert: bool = False) -> ssl.SSLContext:
        return self.files.server_context(cert, require_client_cert)

    def tls_options(self, client_cert: bool = False) -> dict[str, str]:
        options = {"tlsCAFile": str(self.files.ca)}
        if client_cert:
            options["tlsCertificateKeyFile"] = str(self.files.client)
            options["tlsCertificateKeyFilePassword"] = certs.KEY_PASSWORD
        return options


def _expired_server_cert(directory: Path) -> Path:
    """A server certificate for 127.0.0.1 that expired yesterday, signed by a CA of its own
    which is appended to this directory's ca.pem, so the expiry is its only fault."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "asyncmongo expired-cert CA")])
    now = datetime.datetime.now(datetime.UTC)
    ca_cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=10))
               .not_valid_after(now + datetime.timedelta(days=10))
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=5))
            .not_valid_after(now - datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    path = directory / "expired.pem"
    path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca_path.read_bytes() + ca_cert.public_bytes(serialization.Encoding.PEM))
    return path


def make_certs(directory: Path) -> KmsCerts:
    files = certs.generate(directory)
    expired = _expired_server_cert(directory)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    der = rsa_key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return KmsCerts(files, expired, base64.b64encode(der).decode())


@dataclass
class KmsServers:
    aws: AwsKms
    azure: AzureKms
    gcp: GcpKms
    kmip: KmipKms
    certs: KmsCerts

    def providers(self) -> dict[str, dict[str, Any]]:
        """aws, azure, gcp and kmip settings, the token endpoints and the KMIP server on the
        simulated servers."""
        return {
            "kmip": {"endpoint": self.kmip.endpoint},
            "aws": {"accessKeyId": AWS_KEY_ID, "secretAccessKey": AWS_SECRET},
            "azure": {"tenantId": AZURE_TENANT, "clientId": AZURE_CLIENT,
                      "clientSecret": AZURE_SECRET,
                      "identityPlatformEndpoint": self.azure.endpoint},
            "gcp": {"email": GCP_EMAIL, "privateKey": self.certs.gcp_private_key,
                    "endpoint": self.gcp.endpoint},
        }

    def master_key(self, provider: str) -> dict[str, Any] | None:
        """The prose tests' master keys, each with the ``endpoint`` of its simulated KMS."""
        base = provider.partition(":")[0]
        if base == "aws":
            return {"region": "us-east-1", "key": AWS_ARN, "endpoint": self.aws.endpoint}
        if base == "azure":
            return {"keyVaultEndpoint": self.azure.endpoint, "keyName": "drivers-3392-keyname"}
        if base == "gcp":
            return {"projectId": "devprod-drivers", "location": "global",
                    "keyRing": "key-ring-csfle", "keyName": "key-name-csfle",
                    "endpoint": self.gcp.endpoint}
        if base == "kmip":
            return {}
        return None

    def tls_options(self, *providers: str) -> dict[str, dict[str, str]]:
        """The test CA for each provider; kmip also presents the client certificate its
        server requires."""
        names = providers or ("aws", "azure", "gcp", "kmip")
        return {name: self.certs.tls_options(client_cert=name.startswith("kmip"))
                for name in names}


@asynccontextmanager
async def kms_servers(kms_certs: KmsCerts) -> AsyncIterator[KmsServers]:
    context = kms_certs.context()
    async with AwsKms(context, credentials={AWS_KEY_ID: AWS_SECRET}) as aws, \
            AzureKms(context, clients={AZURE_CLIENT: AZURE_SECRET}) as azure, \
            GcpKms(context, emails=[GCP_EMAIL]) as gcp, \
            KmipKms(kms_certs.context(require_client_cert=True)) as kmip:
        yield KmsServers(aws, azure, gcp, kmip, kms_certs)
