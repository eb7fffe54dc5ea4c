"""The documented deployment's TLS (docs/stations.md "Security"): a study server listening on a tls/
endpoint with its certificate, a station that trusts the CA, and clients that do not get in.

The CA and the server certificate are made by ``trustme`` (a test CA, PyPI) for ``localhost``."""

from __future__ import annotations

import time

import pytest
import zenoh

from pointlab.bridge.stations.wire import zenoh_config
from tests.bridge.stations.support import free_port

pytestmark = pytest.mark.slow  # the refused clients wait out their connect timeout


@pytest.fixture
def tls_files(tmp_path):
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    return tmp_path


def test_a_station_trusting_the_ca_joins_over_tls_and_others_do_not(tls_files):
    port = free_port()
    server = zenoh.open(
        zenoh_config(
            mode="router",
            listen=[f"tls/localhost:{port}"],
            tls={"listen_certificate": str(tls_files / "cert.pem"), "listen_private_key": str(tls_files / "key.pem")},
        )
    )
    seen: list[str] = []
    sub = server.liveliness().declare_subscriber("pointlab/station/*", lambda s: seen.append(str(s.key_expr)))
    try:
        station = zenoh.open(
            zenoh_config(
                mode="client",
                connect=[f"tls/localhost:{port}"],
                tls={"root_ca_certificate": str(tls_files / "ca.pem")},
                connect_timeout_s=10,
            )
        )
        token = station.liveliness().declare_token("pointlab/station/t1")
        end = time.monotonic() + 15
        while "pointlab/station/t1" not in seen and time.monotonic() < end:
            time.sleep(0.02)
        assert seen == ["pointlab/station/t1"]
        # without the CA the server's certificate is not trusted; plain TCP to a TLS port is no handshake
        for endpoint, tls in ((f"tls/localhost:{port}", None), (f"tcp/127.0.0.1:{port}", None)):
            with pytest.raises(zenoh.ZError, match="Unable to connect"):
                zenoh.open(zenoh_config(mode="client", connect=[endpoint], tls=tls, connect_timeout_s=2))
        token.undeclare()
        station.close()
    finally:
        sub.undeclare()
        server.close()
