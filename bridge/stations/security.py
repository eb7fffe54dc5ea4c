"""Who may say what on the study's Zenoh network: per-station credentials and access control.

docs/stations.md, "Security". A station logs in with Zenoh's user/password authentication
(``transport/auth/usrpwd``; the server's ``--credentials`` file has one ``user:password`` line per
station) and its **user name is its station name**. Zenoh's access control (``access_control``, default
deny) then lets user ``NAME`` only:

- hold the liveliness token ``pointlab/station/NAME`` and answer queries under ``pointlab/station/NAME/**``;
- publish its live view on ``pointlab/station/NAME/live``;
- deliver records on ``pointlab/server/records/NAME`` (the server also checks the record's station);
- watch the server's token ``pointlab/server``.

So a station cannot publish or answer under another station's name, and a client without valid
credentials is refused at the handshake. Participants' browsers reach the web app only.
"""

from __future__ import annotations

from pathlib import Path

from pointlab.bridge.stations.wire import NAME_RE, RECORDS, SERVER_TOKEN, station_token

__all__ = ["read_credentials", "station_acl"]


def read_credentials(path: str | Path) -> list[str]:
    """The user names of a Zenoh credentials file (``user:password`` lines; ``#`` comments).

    Raises:
        ValueError: a line is not ``user:password``, a user is not a valid station name, or repeated.
    """
    users: list[str] = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not password:
            raise ValueError(f"line {n}: expected user:password")
        if not NAME_RE.match(user):
            raise ValueError(f"line {n}: user {user!r} is not a station name ({NAME_RE.pattern})")
        if user in users:
            raise ValueError(f"line {n}: user {user!r} repeated")
        users.append(user)
    if not users:
        raise ValueError("no user:password line")
    return users


def station_acl(credentials: str | Path) -> dict:
    """Zenoh's ``access_control`` block for the stations of ``credentials`` (module docstring)."""
    users = read_credentials(credentials)
    rules, subjects, policies = [], [], []
    for i, user in enumerate(users):
        own = [station_token(user), f"{station_token(user)}/**", f"{RECORDS}/{user}", SERVER_TOKEN]
        rules.append(
            {
                "id": f"station{i}",
                "messages": [
                    "put",
                    "delete",
                    "declare_subscriber",
                    "query",
                    "reply",
                    "declare_queryable",
                    "liveliness_token",
                    "declare_liveliness_subscriber",
                    "liveliness_query",
                ],
                "flows": ["ingress", "egress"],
                "permission": "allow",
                "key_exprs": own,
            }
        )
        subjects.append({"id": f"user{i}", "usernames": [user]})
        policies.append({"id": f"policy{i}", "rules": [f"station{i}"], "subjects": [f"user{i}"]})
    return {"enabled": True, "default_permission": "deny", "rules": rules, "subjects": subjects, "policies": policies}
