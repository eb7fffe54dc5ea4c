"""The documented deployment's security (docs/stations.md, "Security") over real Zenoh sessions in this
process: a Zenoh router with the credentials file and ``station_acl`` (as ``StudyServer`` opens it) and
Zenoh clients with a station's user/password (as ``StationNode`` opens them), all on 127.0.0.1.

Every refusal stands beside a positive control in the same test (the same action under the station's own
name, or by the server, gets through), and a refusal is asserted only after a barrier shows that what
was refused would have arrived by then: a later message on the same link (Zenoh delivers a link's
messages of one priority in order) has been seen, or, for a client that cannot log in, its next attempt
to connect (a client retries only after an attempt failed).

What Zenoh 1.x does, verified here:

- a client whose credentials the router refuses (wrong password, none, unknown user) fails its
  handshake; with Zenoh's own client defaults (``connect/timeout_ms`` 0, ``exit_on_failure`` true)
  ``zenoh.open`` raises ``ZError``; with the station's settings (``wire.zenoh_config``: retry forever)
  ``zenoh.open`` does not return, the client keeps trying and the router never holds a transport from it;
- the credentials file is trimmed per line and split at the first ``:``, and has no comments (a ``#``
  line is a user);
- access control drops what no rule allows, per message kind and direction, by key expression inclusion.

https://zenoh.io/docs/manual/user-password/ (user/password authentication),
https://zenoh.io/docs/manual/access-control/ (access control: rules, subjects, policies, ingress and
egress, default deny), https://github.com/eclipse-zenoh/zenoh/blob/main/DEFAULT_CONFIG.json5
(``connect/timeout_ms``, ``connect/exit_on_failure``, the retry period, ``access_control``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pointlab.bridge.stations.security import read_credentials, station_acl
from pointlab.bridge.stations.wire import zenoh_config
from tests.bridge.stations.support import Relay, ThreadLoop, free_port, wait_for

PASSWORDS = {"s1": "pw-one-3f9a", "s2": "pw-two-77c1"}


def _write(path: Path, pairs: dict[str, str]) -> Path:
    path.write_text("".join(f"{u}:{p}\n" for u, p in pairs.items()), encoding="utf-8")
    return path


def _client(endpoint: str, user: str | None, password: str | None = None, *, give_up_s: float = 10.0):
    """A station's Zenoh session (``wire.zenoh_config``, as ``StationNode`` opens it), except that a
    refused login raises ``ZError`` after ``give_up_s`` of retries instead of retrying forever: a test
    whose control station cannot log in fails, it never hangs."""
    import zenoh

    cfg = zenoh_config(mode="client", connect=[endpoint], user=user, password=password)
    cfg.insert_json5("connect/timeout_ms", str(int(give_up_s * 1000)))
    cfg.insert_json5("connect/exit_on_failure", "true")
    return zenoh.open(cfg)


def _kind(sample) -> str:
    import zenoh

    return "PUT" if sample.kind == zenoh.SampleKind.PUT else "DELETE"


def _ok_replies(replies) -> list[bytes]:
    return [r.ok.payload.to_bytes() for r in replies if r.ok is not None]


class _Router:
    """The study server's Zenoh router with ``station_acl`` and what its own session sees, as
    ``StudyServer`` declares it: a liveliness subscriber on ``pointlab/station/*`` (with history), a
    subscriber on ``pointlab/station/*/live``, the queryable ``pointlab/server/records/*`` (it replies
    ``ack``) and the token ``pointlab/server``."""

    def __init__(self, credentials: Path | None, acl: dict | None) -> None:
        import zenoh

        self.port = free_port()
        self.endpoint = f"tcp/127.0.0.1:{self.port}"
        self.tokens: list[tuple[str, str]] = []  # (key, "PUT"|"DELETE")
        self.live: list[str] = []
        self.records: list[str] = []
        cfile = None if credentials is None else str(credentials)
        self.session = zenoh.open(zenoh_config(mode="router", listen=[self.endpoint], credentials_file=cfile, acl=acl))
        s = self.session
        self._decls = [
            s.liveliness().declare_subscriber("pointlab/station/*", self._on_token, history=True),
            s.declare_subscriber("pointlab/station/*/live", lambda sample: self.live.append(str(sample.key_expr))),
            s.declare_queryable("pointlab/server/records/*", self._on_record),
        ]
        self.token = s.liveliness().declare_token("pointlab/server")

    def _on_token(self, sample) -> None:
        self.tokens.append((str(sample.key_expr), _kind(sample)))

    def _on_record(self, query) -> None:
        self.records.append(str(query.key_expr))
        query.reply(query.key_expr, b"ack")

    def saw_token(self, key: str) -> bool:
        return (key, "PUT") in self.tokens

    def client_zids(self) -> set[str]:
        return {str(t.zid) for t in self.session.info.transports()}

    def close(self) -> None:
        self.session.close()


@pytest.fixture
def credentials(tmp_path) -> Path:
    return _write(tmp_path / "stations.credentials", PASSWORDS)


@pytest.fixture
def router(credentials):
    r = _Router(credentials, station_acl(credentials))
    yield r
    r.close()


@pytest.fixture
def held() -> list:
    """Keeps the test's declarations (tokens, queryables, subscribers) alive until its end."""
    return []


@pytest.fixture
def s1(router):
    """Station s1's session, logged in with its own credentials."""
    c = _client(router.endpoint, "s1", PASSWORDS["s1"])
    yield c
    c.close()


# -- 1. who may connect -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "password"),
    [("s1", "not-the-password"), (None, None), ("s9", "pw-of-no-station")],
    ids=["wrong-password", "no-credentials", "unknown-user"],
)
def test_a_client_without_valid_credentials_fails_to_open_with_zenohs_client_defaults(router, user, password):
    """With Zenoh's own client defaults (one attempt: ``connect/timeout_ms`` 0, ``exit_on_failure``
    true) a wrong password, no credentials at all or a user the file does not name make ``zenoh.open``
    raise ``ZError`` ("Unable to connect"), and the router holds no transport from it; the same call
    with a station's own credentials opens (control)."""
    import zenoh

    good = _client(router.endpoint, "s1", PASSWORDS["s1"], give_up_s=0)  # control: the same settings
    try:
        assert router.client_zids() == {str(good.info.zid())}
    finally:
        good.close()
    with pytest.raises(zenoh.ZError, match="Unable to connect"):
        _client(router.endpoint, user, password, give_up_s=0)
    assert wait_for(lambda: not router.client_zids(), 10, "the control client's transport to close")


class _Opening:
    """``zenoh.open`` of a client in a thread (with the station's settings it may never return)."""

    def __init__(self, endpoint: str, user: str | None, password: str | None) -> None:
        self.session: Any = None  # the zenoh.Session once open
        self.error: BaseException | None = None
        self.done = threading.Event()
        threading.Thread(target=self._run, args=(endpoint, user, password), name="zenoh-open", daemon=True).start()

    def _run(self, endpoint: str, user: str | None, password: str | None) -> None:
        import zenoh

        try:  # the station's own settings: retry forever
            self.session = zenoh.open(zenoh_config(mode="client", connect=[endpoint], user=user, password=password))
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self.error = e
        finally:
            self.done.set()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("user", "password"),
    [("s1", "not-the-password"), (None, None)],
    ids=["wrong-password", "no-credentials"],
)
def test_with_the_stations_settings_a_refused_client_keeps_retrying_and_never_gets_in(
    router, tmp_path, held, user, password
):
    """With the station's settings (``wire.zenoh_config``: ``connect/timeout_ms`` -1,
    ``exit_on_failure`` false) Zenoh does not raise on refused credentials: ``zenoh.open`` keeps
    retrying and does not return, so the client declares nothing at all. Shown by its connection
    attempts (a relay counts them): a second attempt means the first was refused (a client retries only
    after a failed attempt), and then ``zenoh.open`` has still not returned and the router holds no
    transport from it, while a station with its own credentials (control) opened on its first attempt,
    its token seen by the router. Last, the relay sends the next attempt to a router that accepts those
    credentials and the same ``zenoh.open`` returns: the client was still retrying (and the thread ends)."""
    good_relay = Relay(router.port)
    good = _client(good_relay.endpoint, "s1", PASSWORDS["s1"])  # control
    relay = Relay(router.port)
    opening = _Opening(relay.endpoint, user, password)
    other = None
    try:
        assert good_relay.accepted == 1
        held.append(good.liveliness().declare_token("pointlab/station/s1"))
        wait_for(lambda: router.saw_token("pointlab/station/s1"), 10, "the control station's token")
        wait_for(lambda: relay.accepted >= 2, 15, "the refused client's second attempt")
        assert not opening.done.is_set(), f"zenoh.open returned: {opening.session or opening.error!r}"
        assert router.client_zids() == {str(good.info.zid())}  # the refused client has no transport
        assert router.tokens == [("pointlab/station/s1", "PUT")]

        # a router that takes these credentials (no credentials: a router without authentication)
        other = _Router(None if user is None else _write(tmp_path / "accepting", {user: password or ""}), None)
        relay.upstream = other.port
        assert opening.done.wait(15), "the client stopped retrying"
        assert opening.error is None and opening.session is not None
        assert str(opening.session.info.zid()) in other.client_zids()
    finally:
        if opening.session is not None:
            opening.session.close()
        good.close()
        if other is not None:
            other.close()
        relay.close()
        good_relay.close()


# -- 2. what a station may do under its own name ----------------------------------------------------


def test_a_station_acts_under_its_own_name(router, s1, held):
    """Station s1 (its own credentials) can hold its token ``pointlab/station/s1``, answer the server's
    queries on ``.../offer`` and ``.../cmd/VERB``, publish its live view on ``.../live``, deliver on
    ``pointlab/server/records/s1`` (the server's reply comes back) and watch the server's token
    ``pointlab/server`` (with its history), all through the router's access control."""
    answered: list[str] = []

    def answer(query) -> None:
        answered.append(str(query.key_expr))
        query.reply(query.key_expr, b"s1 answers")

    server_token: list[str] = []
    held[:] = [
        s1.declare_queryable("pointlab/station/s1/offer", answer),
        s1.declare_queryable("pointlab/station/s1/cmd/*", answer),
        s1.liveliness().declare_subscriber("pointlab/server", lambda s: server_token.append(_kind(s)), history=True),
    ]
    held.append(s1.liveliness().declare_token("pointlab/station/s1"))
    wait_for(lambda: router.saw_token("pointlab/station/s1"), 10, "s1's token at the router")
    wait_for(lambda: server_token == ["PUT"], 10, "the server's token at s1")
    assert _ok_replies(router.session.get("pointlab/station/s1/offer", timeout=10)) == [b"s1 answers"]
    assert _ok_replies(router.session.get("pointlab/station/s1/cmd/state", payload=b"{}", timeout=10)) == [
        b"s1 answers"
    ]
    assert answered == ["pointlab/station/s1/offer", "pointlab/station/s1/cmd/state"]
    pub = s1.declare_publisher("pointlab/station/s1/live")

    def frames() -> int:
        pub.put(b"\xff\xd8 a frame")
        return router.live.count("pointlab/station/s1/live")

    wait_for(lambda: frames() >= 3, 10, "s1's live frames at the router")
    assert _ok_replies(s1.get("pointlab/server/records/s1", payload=b"{}", timeout=10)) == [b"ack"]
    assert router.records == ["pointlab/server/records/s1"]


# -- 3. what a station may not do under another's name -----------------------------------------------


def test_a_station_cannot_hold_another_stations_token(router, s1, held):
    """s1 declaring ``pointlab/station/s2`` is never seen by the server's liveliness subscriber; its own
    token, declared after it on the same link, is (control and barrier)."""
    held.append(s1.liveliness().declare_token("pointlab/station/s2"))
    held.append(s1.liveliness().declare_token("pointlab/station/s1"))
    wait_for(lambda: router.saw_token("pointlab/station/s1"), 10, "s1's own token")
    history = [s.key_expr for s in _collect_tokens(router.session)]
    assert router.tokens == [("pointlab/station/s1", "PUT")]
    assert [str(k) for k in history] == ["pointlab/station/s1"]  # nor in the tokens' history


def _collect_tokens(session) -> list:
    """The live tokens under ``pointlab/station/*`` as a liveliness query at the router answers them."""
    return [r.ok for r in session.liveliness().get("pointlab/station/*", timeout=5) if r.ok is not None]


def test_a_station_cannot_answer_as_another_station(router, s1, held):
    """A queryable s1 declares on ``pointlab/station/s2/offer`` (or ``.../cmd/*``) is never reached by
    the server's query; the same queryables under ``s1``, declared after them, answer (control)."""
    hits: list[str] = []

    def answer(query) -> None:
        hits.append(str(query.key_expr))
        query.reply(query.key_expr, b"s1 answers")

    for key in (
        "pointlab/station/s2/offer",
        "pointlab/station/s2/cmd/*",
        "pointlab/station/s1/offer",
        "pointlab/station/s1/cmd/*",
    ):
        held.append(s1.declare_queryable(key, answer))
    held.append(s1.liveliness().declare_token("pointlab/station/s1"))  # after the declarations on the same link
    wait_for(lambda: router.saw_token("pointlab/station/s1"), 10, "s1's token")
    assert _ok_replies(router.session.get("pointlab/station/s1/offer", timeout=10)) == [b"s1 answers"]
    assert _ok_replies(router.session.get("pointlab/station/s1/cmd/home", timeout=10)) == [b"s1 answers"]
    assert _ok_replies(router.session.get("pointlab/station/s2/offer", timeout=3)) == []
    assert _ok_replies(router.session.get("pointlab/station/s2/cmd/home", timeout=3)) == []
    assert hits == ["pointlab/station/s1/offer", "pointlab/station/s1/cmd/home"]


def test_a_station_cannot_publish_as_another_station(router, s1):
    """s1's publications on ``pointlab/station/s2/live`` never reach the server's subscriber, while its
    own frames, each sent after one of those on the same link, do (control and barrier)."""
    other = s1.declare_publisher("pointlab/station/s2/live")
    own = s1.declare_publisher("pointlab/station/s1/live")

    def frames() -> int:
        other.put(b"\xff\xd8 not s1's frame")
        own.put(b"\xff\xd8 s1's frame")
        return router.live.count("pointlab/station/s1/live")

    wait_for(lambda: frames() >= 5, 10, "s1's own frames")
    assert set(router.live) == {"pointlab/station/s1/live"}


def test_a_station_cannot_deliver_records_as_another_station(router, s1):
    """s1's query on ``pointlab/server/records/s2`` never reaches the server's queryable and gets no
    reply; its delivery on ``pointlab/server/records/s1`` is acknowledged (control)."""
    assert _ok_replies(s1.get("pointlab/server/records/s2", payload=b"{}", timeout=3)) == []
    assert _ok_replies(s1.get("pointlab/server/records/s1", payload=b"{}", timeout=10)) == [b"ack"]
    assert router.records == ["pointlab/server/records/s1"]


def test_a_station_cannot_command_or_watch_another_station(router, s1, held):
    """s1 cannot query station s2's commands (say ``cmd/estop``) nor see s2's live view, while the
    server can do both (control). s2 is a real, authenticated station."""
    s2 = _client(router.endpoint, "s2", PASSWORDS["s2"])
    try:
        hits: list[str] = []

        def answer(query) -> None:
            hits.append(str(query.key_expr))
            query.reply(query.key_expr, b"s2 answers")

        watched: list[str] = []
        held[:] = [
            s2.declare_queryable("pointlab/station/s2/cmd/*", answer),
            s1.declare_subscriber("pointlab/station/*/live", lambda s: watched.append(str(s.key_expr))),
            s1.declare_subscriber("pointlab/station/s2/live", lambda s: watched.append(str(s.key_expr))),
        ]
        held.append(s2.liveliness().declare_token("pointlab/station/s2"))
        held.append(s1.liveliness().declare_token("pointlab/station/s1"))  # after s1's subscribers on the same link
        wait_for(
            lambda: router.saw_token("pointlab/station/s2") and router.saw_token("pointlab/station/s1"), 10, "tokens"
        )
        assert _ok_replies(router.session.get("pointlab/station/s2/cmd/estop", timeout=10)) == [b"s2 answers"]
        assert _ok_replies(s1.get("pointlab/station/s2/cmd/estop", timeout=3)) == []
        assert hits == ["pointlab/station/s2/cmd/estop"]

        pub = s2.declare_publisher("pointlab/station/s2/live")

        def frames() -> int:
            pub.put(b"\xff\xd8 s2's frame")
            return router.live.count("pointlab/station/s2/live")

        wait_for(lambda: frames() >= 3, 10, "s2's frames at the server")
        # barrier: a reply the router sends s1 after it routed those frames (one link, in order)
        assert _ok_replies(s1.get("pointlab/server/records/s1", payload=b"{}", timeout=10)) == [b"ack"]
        assert watched == []
    finally:
        s2.close()


def test_a_station_cannot_hold_the_servers_token(router, s1, held):
    """A station cannot declare ``pointlab/server``: if it could, other stations would keep seeing the
    server after it went and would not halt their arms. s1 declares it, then its own token (barrier,
    control); when the server withdraws its token, station s2 watching ``pointlab/server`` sees it go."""
    s2 = _client(router.endpoint, "s2", PASSWORDS["s2"])
    try:
        seen: list[str] = []
        held.append(
            s2.liveliness().declare_subscriber("pointlab/server", lambda s: seen.append(_kind(s)), history=True)
        )
        wait_for(lambda: seen == ["PUT"], 10, "the server's token at s2")
        held.append(s1.liveliness().declare_token("pointlab/server"))
        held.append(s1.liveliness().declare_token("pointlab/station/s1"))
        wait_for(lambda: router.saw_token("pointlab/station/s1"), 10, "s1's token")
        router.token.undeclare()
        wait_for(lambda: seen == ["PUT", "DELETE"], 10, "s2 to see the server's token go")
    finally:
        s2.close()


@pytest.mark.slow
def test_the_study_server_and_a_station_work_through_the_acl(credentials, tmp_path, study):
    """The real ``StudyServer`` (router, credentials file, ``station_acl``) and a real ``StationNode``
    logged in as s1: the station sees the server's token, the server finds it (token, then its offer),
    takes its live frames, commands it (``state``, the block's reset, a trial) and gets the trial's
    record both as the reply and delivered from the station's journal (acknowledged, stored once)."""
    from pointlab.bridge.stations.journal import Journal
    from pointlab.bridge.stations.server import StudyServer
    from pointlab.bridge.stations.station_node import StationNode
    from pointlab.bridge.stations.wire import Offer
    from pointlab.sim_mock.scripted_station import ScriptedWorld

    store, participant = study
    endpoint = f"tcp/127.0.0.1:{free_port()}"
    loop = ThreadLoop()

    def run(coro, timeout: float = 30.0):
        return loop.run(coro, timeout)

    server = StudyServer(
        store, listen=[endpoint], credentials_file=str(credentials), acl=station_acl(credentials), lease_s=1.0
    )
    server.start(loop.loop)
    world = ScriptedWorld()
    offer = Offer(name="s1", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    made: list = []  # the node, or why it could not be made

    def make() -> None:  # StationNode retries a refused login for its connect timeout: bounded here too
        try:
            made.append(
                StationNode(
                    world.station(),
                    offer,
                    Journal(tmp_path / "s1.sqlite", "s1"),
                    connect=[endpoint],
                    user="s1",
                    password=PASSWORDS["s1"],
                    live_hz=10,
                    lease_s=1.0,
                )
            )
        except Exception as e:  # noqa: BLE001 - reported below
            made.append(e)

    threading.Thread(target=make, name="station-node", daemon=True).start()
    node = None
    try:
        (node,) = wait_for(lambda: made, 15, "the station to log in")
        assert isinstance(node, StationNode), f"the station could not open: {node!r}"
        wait_for(lambda: node.server_up, 10, "the server's token at the station")
        wait_for(
            lambda: "s1" in server.dispatch.stations and server.dispatch.stations["s1"].status == "idle",
            10,
            "the server to find s1 and its offer",
        )
        assert server.dispatch.stations["s1"].offer["name"] == "s1"
        wait_for(lambda: "s1" in server.live, 10, "s1's live frames at the server")
        assert run(server.command("s1", "state", timeout_s=10))["ok"] is True
        run(server.start_block(participant))
        row = run(server.run_trial(participant, "pick up the red disc"), 60)
        assert store.trial(row)["trial_uid"]
        wait_for(lambda: node.journal.counts()["undelivered"] == 0, 15, "the journal's delivery to be acknowledged")
        assert server.stats["refused"] == 0 and len(store.trials()) == 1
    finally:
        if isinstance(node, StationNode):
            node.close()
        server.close()
        loop.stop()


# -- 4. the credentials file -------------------------------------------------------------------------


def test_read_credentials_reads_the_file_as_zenoh_does(tmp_path):
    """``read_credentials`` and Zenoh read the same file the same way (a real router with it): blank
    lines are skipped, a line is trimmed, a password is split at the first ``:``. s1 logs in with
    ``pw:with:colons`` (not ``pw``), s2 with ``x`` (not ``x  ``). Zenoh has no comments: a router whose
    file has ``# s3:old`` lets a user named ``# s3`` log in, which is why ``read_credentials`` refuses a
    ``#`` line (next test)."""
    import zenoh

    path = tmp_path / "c"
    path.write_text("\n  s1:pw:with:colons  \r\n\ns2:x  \n", encoding="utf-8")
    assert read_credentials(path) == ["s1", "s2"]
    router = _Router(path, station_acl(path))
    try:
        for user, password in (("s1", "pw:with:colons"), ("s2", "x")):
            _client(router.endpoint, user, password, give_up_s=0).close()
        for user, password in (("s1", "pw"), ("s2", "x  "), ("s1:pw", "with:colons")):
            with pytest.raises(zenoh.ZError, match="Unable to connect"):
                _client(router.endpoint, user, password, give_up_s=0)
    finally:
        router.close()
    commented = _write(tmp_path / "commented", {"# s3": "old", "s1": "pw"})
    router = _Router(commented, None)
    try:
        _client(router.endpoint, "# s3", "old", give_up_s=0).close()  # Zenoh: a '#' line is a user
    finally:
        router.close()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("s1:pw\njust-a-name\n", r"line 2: expected user:password"),
        ("s1:\n", r"line 1: expected user:password \(a non-empty password\)"),
        ("s1:pw\nbad/name:pw\n", r"line 2: user 'bad/name' is not a station name"),
        ("s*:pw\n", r"line 1: user 's\*' is not a station name"),
        (":pw\n", r"line 1: user '' is not a station name"),
        ("s1 : pw\n", r"line 1: user 's1 ' is not a station name"),
        ("s1:pw\ns2:pw\ns1:other\n", r"line 3: user 's1' repeated"),
        ("s1:pw\n# s3:old\n", r"line 2: Zenoh's credentials file has no comments"),
        ("", r"no user:password line"),
        ("\n  \n", r"no user:password line"),
        (b"s1:\xff\xfe\n", r"cannot read"),
        (None, r"cannot read"),
    ],
    ids=[
        "no-colon",
        "empty-password",
        "slash",
        "wildcard",
        "empty-user",
        "blank-in-user",
        "repeated",
        "comment",
        "empty",
        "blank-only",
        "not-utf8",
        "missing",
    ],
)
def test_read_credentials_refuses_a_bad_file_with_a_clear_message(tmp_path, text, message):
    """Each fault raises ``ValueError`` naming the line and what is wrong; ``station_acl`` refuses the
    same file the same way (the server does not start with a file Zenoh would read otherwise)."""
    path = tmp_path / "c"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_credentials(path)
    with pytest.raises(ValueError, match=message):
        station_acl(path)


@pytest.mark.parametrize("domain", ["102", "150", "214"])
def test_a_station_refuses_a_ros_domain_outside_ros_2s_ranges_before_it_starts(domain, tmp_path, capsys, monkeypatch):
    from pointlab.bridge.cli import run

    monkeypatch.chdir(tmp_path)
    code = run(["act", "station", "--connect", "tcp/127.0.0.1:7447", "--name", "s1", "--domain-id", domain])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "0-101 or 215-232" in err[0]
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written
