"""Who may say what on the study's Zenoh network: per-station credentials and access control.

docs/stations.md, "Security". A station logs in with Zenoh's user/password authentication
(``transport/auth/usrpwd``; the server's ``--credentials`` file has one ``user:password`` line per
station) and its **user name is its station name**. Zenoh's access control (``access_control``, default
deny) then lets user ``NAME`` only:

- hold the liveliness token ``pointlab/station/NAME``;
- answer queries and publish under ``pointlab/station/NAME/**`` (its offer, its commands, its live view);
- deliver records on ``pointlab/server/records/NAME`` (the server also checks the record's station);
- watch the server's token ``pointlab/server`` (and not hold it: a station holding it would hide the
  server's loss from the other stations, which would then not halt their arms).

So a station cannot hold a token, answer, publish or deliver under another station's name, nor command
or watch another station. A client without valid credentials fails its handshake: with a station's
settings (``wire.zenoh_config``: retry forever) its ``zenoh.open`` keeps retrying and does not return.
Participants' browsers reach the web app only. Verified with real sessions in
``tests/bridge/stations/test_security.py``.
"""

from __future__ import annotations

from pathlib import Path

from pointlab.bridge.stations.wire import FILES, NAME_RE, RECORDS, SERVER_TOKEN, STATION_ROOT, station_token

__all__ = ["read_credentials", "station_acl"]


def read_credentials(path: str | Path) -> list[str]:
    """The user names of a Zenoh credentials file: ``user:password`` lines (blank lines are allowed).

    The server hands this very file to Zenoh (``transport/auth/usrpwd/dictionary_file``), so it is
    checked the way Zenoh 1.x reads it (verified in ``tests/bridge/stations/test_security.py``): each line
    is trimmed and split at its first ``:`` (a password may hold ``:``), and there are **no comments**:
    Zenoh reads ``# s3:old`` as a user ``# s3`` who can log in, and refuses to start on a ``#`` line
    without ``:``. A repeated user would silently get its last line's password.

    Raises:
        ValueError: the file cannot be read; a line is a ``#`` comment, or not ``user:password`` with a
            non-empty password; a user is not a valid station name (``wire.NAME_RE``) or is repeated;
            the file has no ``user:password`` line.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {e}") from e
    users: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            raise ValueError(f"line {n}: Zenoh's credentials file has no comments (it would read this line as a user)")
        user, sep, password = line.partition(":")
        if not sep or not password:
            raise ValueError(f"line {n}: expected user:password (a non-empty password)")
        if not NAME_RE.match(user):
            raise ValueError(f"line {n}: user {user!r} is not a station name ({NAME_RE.pattern})")
        if user in users:
            raise ValueError(f"line {n}: user {user!r} repeated")
        users.append(user)
    if not users:
        raise ValueError(f"{path}: no user:password line")
    return users


def station_acl(credentials: str | Path) -> dict:
    """Zenoh's ``access_control`` block for the stations of ``credentials`` (module docstring).

    Zenoh checks each message on the router's link to a client, per direction: **ingress** is what the
    station sends the router, **egress** what the router sends the station; anything no rule allows is
    dropped (``default_permission: deny``). A declaration or message is allowed when its key expression
    is included in one of the rule's ``key_exprs`` (only intersecting is not enough: the server's
    subscriber ``pointlab/station/*/live`` needs a rule of its own). User ``NAME`` gets:

    - ingress: its token ``pointlab/station/NAME``; queryables, replies and publications under
      ``pointlab/station/NAME/**``; queries on ``pointlab/server/records/NAME`` and
      ``pointlab/server/files/NAME`` (its recordings); a liveliness
      subscriber on ``pointlab/server`` (its history comes without ``liveliness_query``);
    - egress: the server's queries under ``pointlab/station/NAME/**``, its replies on
      ``pointlab/server/records/NAME`` and ``.../files/NAME``, the server's token ``pointlab/server``, and the declaration of
      the server's subscriber ``pointlab/station/*/live``: without it the station is told of no matching
      subscriber (``Publisher.matching_status`` false) and none of its frames arrive.

    https://zenoh.io/docs/manual/access-control/ (rules, subjects, policies; ingress and egress).

    Raises:
        ValueError: ``credentials`` is not a valid credentials file (``read_credentials``).
    """
    users = read_credentials(credentials)

    def rule(rid: str, flow: str, messages: list[str], key_exprs: list[str]) -> dict:
        return {"id": rid, "flows": [flow], "messages": messages, "permission": "allow", "key_exprs": key_exprs}

    rules = [  # the same for every station
        rule("watch-server", "ingress", ["declare_liveliness_subscriber"], [SERVER_TOKEN]),  # history too
        rule("server-token", "egress", ["liveliness_token"], [SERVER_TOKEN]),
        rule("server-live-subscriber", "egress", ["declare_subscriber"], [f"{STATION_ROOT}/*/live"]),
    ]
    subjects = [{"id": "stations", "usernames": list(users)}]
    policies = [{"id": "all-stations", "rules": [r["id"] for r in rules], "subjects": ["stations"]}]
    for i, user in enumerate(users):  # ids by index: a user name never makes two ids collide
        token, own = station_token(user), f"{station_token(user)}/**"
        records, files = f"{RECORDS}/{user}", f"{FILES}/{user}"
        mine = [
            rule(f"station{i}-token", "ingress", ["liveliness_token"], [token]),
            rule(f"station{i}-answer", "ingress", ["declare_queryable", "reply", "put"], [own]),
            rule(f"station{i}-asked", "egress", ["query"], [own]),
            rule(f"station{i}-deliver", "ingress", ["query"], [records, files]),
            rule(f"station{i}-acknowledged", "egress", ["reply"], [records, files]),
        ]
        rules += mine
        subjects.append({"id": f"station{i}", "usernames": [user]})
        policies.append({"id": f"station{i}", "rules": [r["id"] for r in mine], "subjects": [f"station{i}"]})
    return {"enabled": True, "default_permission": "deny", "rules": rules, "subjects": subjects, "policies": policies}
