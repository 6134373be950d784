"""A remote over TLS: the certificate is verified, a private CA is named with --ca-file."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os

import pytest
from remote_support import TeamServer, local_kb
from serve_support import cli

pytestmark = pytest.mark.slow


def _self_signed(folder) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kbdesk test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)


def test_tls_is_verified_and_a_ca_file_makes_a_private_certificate_trusted(tmp_path, kbdesk_home):
    cert, key = _self_signed(tmp_path)
    team = TeamServer(tmp_path, serve_args=("--ssl-certfile", cert, "--ssl-keyfile", key))
    try:
        url = team.url
        assert url.startswith("https://")
        env = {**os.environ, "TEAM_KB_TOKEN": team.token}
        local_kb(tmp_path, env)
        refused = cli("remote", "add", "team", url, "--token-env", "TEAM_KB_TOKEN", env=env, check=False)
        assert refused.returncode == 1 and "TLS certificate could not be verified" in refused.stderr
        assert "--ca-file" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        cli("remote", "add", "team", url, "--token-env", "TEAM_KB_TOKEN", "--ca-file", cert, env=env)
        body = json.loads(cli("search", "Notes", "team:*", "backups", "--json", env=env).stdout)
        assert {r["kb"] for r in body["results"]} == {"Notes", "team:Product Docs"}
    finally:
        team.stop()
