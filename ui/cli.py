"""The ui package's commands, registered as the ``ui`` entry point of the ``pointlab.cli`` group
(see ``pointlab.benchmark.clikit``): the commands that serve a web app.

- ``pointlab act [--camera ...] [--robot ...] [--agents FILE] [--db FILE] [--host H] [--port P]``
  starts the Point-Act session and its web app and prints the operator URL;
- ``pointlab bench arena``: Point-Battle (battle page, leaderboard, human baseline);
- ``pointlab pinpoint study``: the PinpointQA human localization study page (App. D).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Optional

import typer

from pointlab.benchmark.clikit import SEED_MAX, SubApp, fail, print_json, require_writable_file, unwritable
from pointlab.bridge.commands.act import CAL_HELP, CAMERA_HELP, DEPTH_FPS_HELP, ROBOT_HELP

from .serve import KEEP_ALIVE_S, serve

__all__ = ["sub", "app"]

sub = SubApp("ui")
act_app, bench_app, pinpoint_app = sub.group("act"), sub.group("bench"), sub.group("pinpoint")
perf_app = sub.group("perf")


def app() -> SubApp:
    """This package's sub-app (its commands are defined in this module and ``perf_commands``)."""
    from . import perf_commands  # noqa: F401 - registers ``pointlab perf loop``

    return sub


@act_app.callback(invoke_without_command=True)
def act(
    ctx: typer.Context,
    camera: str = typer.Option("sim", "--camera", help=CAMERA_HELP),
    robot: str = typer.Option("sim", "--robot", help=ROBOT_HELP),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: sim-oracle, sim-noisy, human)"),
    db: Path = typer.Option(Path("pointlab-act.sqlite"), "--db", help="SQLite file of studies, trials and surveys"),
    host: str = typer.Option("127.0.0.1", "--host", help="address the web app binds to"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="port of the web app"),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=CAL_HELP),
    time_scale: float = typer.Option(1.0, "--time-scale", help="sim arm motion-time multiplier"),
    operator_token: Optional[str] = typer.Option(
        None,
        "--operator-token",
        envvar="POINTLAB_OPERATOR_TOKEN",
        help="secret of the operator console (default: random)",
    ),
    public_url: Optional[str] = typer.Option(
        None,
        "--public-url",
        help="base URL participants reach this server at (invite links), e.g. "
        "https://robot.lab.example; default: the URL the operator uses",
    ),
    foxglove: bool = typer.Option(
        False,
        "--foxglove",
        help="serve the topics live to Foxglove/Lichtblick over the Foxglove WebSocket protocol (127.0.0.1 only)",
    ),
    foxglove_port: int = typer.Option(8765, "--foxglove-port", min=1, max=65535, help="port of --foxglove"),
    depth_fps: Optional[float] = typer.Option(None, "--depth-fps", help=DEPTH_FPS_HELP),
) -> None:
    """Start a Point-Act session (camera, agents, arm, web app) and print the operator URL.

    With no subcommand this is the default session: sim camera, sim arm, sim-oracle, sim-noisy and
    the human reference. Stop it with Ctrl-C.
    """
    if ctx.invoked_subcommand is not None:
        return
    from pointlab.bridge.commands.act import start_or_fail

    from .app import UiSettings, create_app
    from .serve import check_port, public_url as url_of

    if operator_token is not None and len(operator_token) < 8:
        fail("--operator-token must be at least 8 characters (it is the operator console's password)")
    check_port(host, port)
    if foxglove:
        check_port("127.0.0.1", foxglove_port)
    token = operator_token or secrets.token_urlsafe(16)
    session = start_or_fail(
        camera, robot, agents, db, calibration, time_scale, foxglove_port if foxglove else None, depth_fps
    )
    try:
        app = create_app(session.parts, session.store, operator_token=token, settings=UiSettings(public_url=public_url))
        serve(
            app,
            host,
            port,
            [
                f"Point-Act session: camera={camera} robot={robot} agents={', '.join(session.agents)} db={db}",
                f"Operator console: {url_of(host, port)}/operator#token={token}",
                "Invite participants from the console: create a study, then 'Invite participant' gives a link to send.",
                *(
                    [
                        f"Foxglove: open a connection to ws://127.0.0.1:{session.foxglove.port} (layout: "
                        "docs/foxglove/pointlab_trial_layout.json)"
                    ]
                    if session.foxglove is not None
                    else []
                ),
                "Stop with Ctrl-C.",
            ],
        )
    finally:
        session.close()


@bench_app.command("arena-publish")
def bench_arena_publish_cmd(
    db: str = typer.Option(..., "--db", help="the arena's store: SQLite file or SQLAlchemy URL"),
    out: Path = typer.Option(..., "--out", help="folder to write (new or empty)"),
    few_votes: int = typer.Option(50, "--few-votes", min=1, max=100000, help="mark models with fewer votes"),
    bootstrap_rounds: int = typer.Option(100, "--bootstrap-rounds", min=10, max=10000, help="bootstrap rounds"),
) -> None:
    """Publish an arena's votes as a bundle: the votes in Chatbot Arena's release form after its
    identity and error filters (and ours: flagged sessions, repeated votes), the ratings with 95 %
    intervals and a few-votes marker, the win matrices, a plot, a README and a SHA-256 manifest
    (docs/arena.md). Prints bundle.json."""
    from dataclasses import replace

    from pointlab.ui.arena.context import ArenaSettings
    from pointlab.ui.arena.release import publish_arena
    from pointlab.ui.arena.store import ArenaStore

    if "://" not in db and not Path(db).is_file():
        fail(f"--db {db}: no such arena database")
    try:
        store = ArenaStore(db)
    except Exception as e:  # not a database, a newer schema, an unreachable server
        fail(f"--db {db}: {e}", 2)
    settings = replace(ArenaSettings(), few_votes=few_votes, bootstrap_rounds=bootstrap_rounds)
    try:
        print_json(publish_arena(store, out, settings=settings))
    except ValueError as e:
        fail(str(e), 2)
    except OSError as e:
        fail(f"writing {out} failed: {e}", 1)
    finally:
        store.close()


@bench_app.command("arena")
def bench_arena_cmd(
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: the four sim arena agents)"),
    db: str = typer.Option(
        "arena.db",
        "--db",
        help="store: SQLite file or SQLAlchemy URL (postgresql+psycopg://user@host/db for several workers)",
    ),
    images: Optional[Path] = typer.Option(
        None, "--images", help="folder of curated images (default: the demo set of sim tabletop images with masks)"
    ),
    masks: Optional[Path] = typer.Option(
        None, "--masks", help="folder of target masks matched to --images by file stem"
    ),
    mask_label: list[str] = typer.Option(
        ["hand"], "--mask-label", help="name(s) an instruction uses for the masked target"
    ),
    demo_dir: Optional[Path] = typer.Option(
        None, "--demo-dir", help="where the demo set is rendered (default: next to --db)"
    ),
    data: Optional[Path] = typer.Option(None, "--data", help="Point-Bench dataset for the human baseline page"),
    sampler: str = typer.Option("uniform", "--sampler", help="uniform | adaptive"),
    workers: int = typer.Option(1, "--workers", min=1, help="worker processes (use a PostgreSQL --db for more than 1)"),
    trusted_proxy: list[str] = typer.Option(
        [], "--trusted-proxy", help="address of a reverse proxy whose X-Forwarded-For is trusted (repeat)"
    ),
    rate_limit: int = typer.Option(20, "--rate-limit", help="new battles per session per minute"),
    address_rate_limit: int = typer.Option(
        120, "--address-rate-limit", help="new battles per client address per minute"
    ),
    few_votes: int = typer.Option(
        50, "--few-votes", help="models with fewer votes are marked instead of given an interval"
    ),
    human_feedback: bool = typer.Option(
        False, "--human-feedback", help="show correctness on the human baseline page (training only)"
    ),
    admin_token: Optional[str] = typer.Option(
        None, "--admin-token", envvar="POINTLAB_ARENA_ADMIN_TOKEN", help="secret of the admin routes (default: random)"
    ),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8010, "--port", min=0, max=65535),
) -> None:
    """Serve Point-Battle (battle page /, /leaderboard, /human, /human/summary)."""
    from .serve import check_port, public_url

    check_port(host, port)
    from pointlab.benchmark.agents_config import SIM_BASE_URL, AgentsConfigError, load_agents_config
    from pointlab.benchmark.pointbench import DatasetError

    from .arena.curated import CuratedSetError
    from .arena.launch import DEFAULT_ARENA_AGENTS, ArenaConfig, build_app, load_curated
    from .arena.store import ArenaError

    local = "://" not in db
    if local and db != ":memory:":
        require_writable_file(Path(db), "--db", sqlite=True)  # before the demo set is rendered beside it
    elif not local:
        from .arena.store import check_store_url

        try:
            check_store_url(db)  # a malformed URL or a missing driver, before the demo set is rendered
        except ArenaError as e:
            fail(str(e))
    home = Path(db).resolve().parent if local else Path.cwd()
    demo = demo_dir or home / "arena_demo"
    if images is None and (why := unwritable(demo)):
        fail(f"--demo-dir {demo}: {why}")
    cfg = ArenaConfig(
        db=db,
        agents=str(agents) if agents else None,
        images=str(images) if images else None,
        masks=str(masks) if masks else None,
        mask_names=list(mask_label),
        demo_dir=str(demo),
        data=str(data) if data else None,
        uploads_dir=str(home / "uploads"),
        settings={
            "sampler": sampler,
            "trusted_proxies": list(trusted_proxy),
            "few_votes": few_votes,
            "human_feedback": human_feedback,
            "max_battles_per_minute": rate_limit,
            "max_battles_per_minute_per_address": address_rate_limit,
        },
        admin_token=admin_token or secrets.token_urlsafe(16),
    )
    stop = None
    try:
        curated = load_curated(cfg)
        if any(a.base_url == SIM_BASE_URL for a in load_agents_config(agents or DEFAULT_ARENA_AGENTS).agents):
            # sim agents (a test double reached through the agents config and the sim_models
            # registry), each answering from the masks of the image it is sent
            from pointlab.benchmark.sim_models import SimModelsUnavailable, serve_sim_models

            try:
                cfg.sim_url, stop = serve_sim_models("arena", curated.sim_entries())
            except SimModelsUnavailable as e:
                fail(str(e), 1)
        arena = build_app(cfg, curated) if workers == 1 else None
    except (AgentsConfigError, DatasetError, CuratedSetError, ArenaError, ValueError) as e:
        if stop:
            stop()
        fail(str(e))
    base = public_url(host, port)
    banner = [
        f"Point-Battle: {base}/  (leaderboard {base}/leaderboard, human baseline {base}/human)",
        f"images: {len(curated)} ({'demo set' if not images else images}); votes in {db} "
        f"(export: {base}/api/votes.jsonl); workers: {workers}",
        f"human-baseline admin: {base}/human/summary#token={cfg.admin_token}",
        "Stop with Ctrl-C.",
    ]
    try:
        if arena is not None:
            from .arena.launch import tune_gc_for_serving

            tune_gc_for_serving()
            serve(arena, host, port, banner, proxy_headers=False)
        else:
            serve_workers(cfg, host, port, workers, banner)
    finally:
        if stop:
            stop()


def serve_workers(cfg, host: str, port: int, workers: int, banner: list[str]) -> None:
    """Run the arena of ``cfg`` in ``workers`` uvicorn worker processes (config passed as a file)."""
    import os
    import tempfile

    import uvicorn

    from pointlab.benchmark.serving import WS_PER_MESSAGE_DEFLATE

    from .arena.launch import CONFIG_ENV

    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="pointlab-arena-", delete=False) as f:
        f.write(cfg.to_json())
    os.environ[CONFIG_ENV] = f.name
    try:
        for line in banner:
            typer.echo(line)
        uvicorn.run(
            "pointlab.ui.arena.asgi:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="warning",
            proxy_headers=False,
            timeout_keep_alive=KEEP_ALIVE_S,
            # as the one-process server (ui.serve): the arena's messages are a few hundred bytes, and
            # a deflate context per websocket costs CPU on every battle (pointlab perf arena)
            ws_per_message_deflate=WS_PER_MESSAGE_DEFLATE,
        )
    finally:
        Path(f.name).unlink(missing_ok=True)


@bench_app.command("annotate")
def bench_annotate_cmd(
    images: Optional[Path] = typer.Option(None, "--images", help="folder of images to annotate"),
    out: Path = typer.Option(
        ..., "--out", help="dataset folder: verified items are written here (release layout + gt.jsonl)"
    ),
    agents: Optional[Path] = typer.Option(
        None, "--agents", help="agents TOML of the models asked (default: the sim arena agents)"
    ),
    models: int = typer.Option(
        3, "--models", min=1, help="how many of the configured models answer each query (PointArena: 3)"
    ),
    annotator: list[str] = typer.Option(
        [], "--annotator", help="NAME=TOKEN of one person (repeat; default: two with random tokens)"
    ),
    segmenter: str = typer.Option("grabcut", "--segmenter", help="grabcut | watershed | URL of a segmentation service"),
    from_arena: Optional[str] = typer.Option(
        None, "--from-arena", help="arena store (path or URL) whose voted battles become candidates"
    ),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8030, "--port", min=0, max=65535),
) -> None:
    """Serve the Point-Bench annotation pages (PointArena sec. 3.2): query, anonymous models, the
    at-most-one-correct filter, seeded and hand-refined masks, verification by a second person."""
    from .serve import check_port, public_url

    check_port(host, port)
    from pointlab.benchmark.agents_config import SIM_BASE_URL, AgentsConfigError, load_agents, load_agents_config
    from pointlab.benchmark.pointbench.annotation import AnnotationError, AnnotationStore
    from pointlab.benchmark.pointbench.masks import HttpSegmenter

    from .annotate import create_annotate_app
    from .arena.launch import DEFAULT_ARENA_AGENTS

    if from_arena and "://" not in from_arena and not Path(from_arena).is_file():
        # it is read, never created: a mistyped path would otherwise become an empty arena database
        fail(f"--from-arena {from_arena}: no such arena database file")
    tokens: dict[str, str] = {}
    for spec in annotator or ["annotator1", "annotator2"]:
        name, _, tok = spec.partition("=")
        tok = tok or secrets.token_urlsafe(12)
        if not name or len(tok) < 8:
            fail(f"--annotator {spec!r}: need NAME=TOKEN with a token of at least 8 characters")
        tokens[tok] = name
    stop = None
    try:
        store = AnnotationStore(out)
        if images is not None:
            store.add_folder(images)
        if from_arena:
            from .arena.store import ArenaStore

            store.promote_battles(ArenaStore(from_arena).voted_battles(), copy_to=store.state / "arena_images")
        if not store.candidates(open_only=False):
            fail("nothing to annotate: give --images and/or --from-arena")
        path = agents or DEFAULT_ARENA_AGENTS
        cfgs = [a for a in load_agents_config(path).agents if a.kind == "openai"][:models]
        if any(a.base_url == SIM_BASE_URL for a in cfgs):
            from pointlab.benchmark.sim_models import serve_sim_models

            sim_url, stop = serve_sim_models("arena", [])
        else:
            sim_url = None
        allowed = {a.name for a in cfgs}
        ags = {n: a for n, a in load_agents(path, sim_base_url=sim_url).items() if n in allowed}
        seg = HttpSegmenter(segmenter) if segmenter.startswith(("http://", "https://")) else segmenter
        web = create_annotate_app(store, ags, tokens, segmenter=seg)
    except (AgentsConfigError, AnnotationError, ValueError) as e:
        if stop:
            stop()
        fail(str(e))
    base = public_url(host, port)
    lines = [
        f"Point-Bench annotation of {len(store.candidates(open_only=False))} images -> {out} "
        f"(models: {', '.join(ags)}; segmenter: {segmenter})"
    ]
    lines += [f"  {name}: {base}/#token={tok}   (verify: {base}/verify#token={tok})" for tok, name in tokens.items()]
    lines.append("Stop with Ctrl-C. Verified items are written to the dataset as they are accepted.")
    try:
        serve(web, host, port, lines)
    finally:
        if stop:
            stop()


@bench_app.command("arena-sim")
def bench_arena_sim_cmd(
    models: int = typer.Option(10, "--models", min=2, help="simulated models"),
    spread: float = typer.Option(300.0, "--spread", help="Elo-scale spread of their true ratings (evenly spaced)"),
    votes: int = typer.Option(2000, "--votes", min=50, help="votes per simulated arena"),
    repeats: int = typer.Option(10, "--repeats", min=1, help="seeds per sampler"),
    checkpoint: int = typer.Option(50, "--checkpoint", min=1, help="fit the ratings every N votes"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX),
) -> None:
    """Adaptive versus uniform pair sampling on synthetic voters with known strengths: votes needed to
    reach a Spearman rank correlation of 0.9 / 0.95 / 0.98 with the true order (docs/arena.md)."""
    from .arena.sampling_sim import compare_samplers

    print_json(
        compare_samplers(
            n_models=models,
            spread=spread,
            n_votes=votes,
            repeats=repeats,
            targets=(0.9, 0.95, 0.98),
            budgets=tuple(b for b in (250, 500, 1000, 2000, 4000) if b <= votes),
            checkpoint=checkpoint,
            seed=seed,
        )
    )


@perf_app.command("arena")
def perf_arena_cmd(
    db: str = typer.Option(
        ..., "--db", help="an empty arena store: SQLAlchemy URL (postgresql+psycopg://...) or SQLite path"
    ),
    workers: int = typer.Option(4, "--workers", min=1),
    voters: int = typer.Option(50, "--voters", min=1, help="concurrent simulated voters"),
    duration_s: float = typer.Option(20.0, "--duration-s", min=0.1, help="how long the voters vote (measured)"),
    warmup_s: float = typer.Option(5.0, "--warmup-s", min=0.0, help="load before the measured window (not measured)"),
) -> None:
    """Votes per second and p50/p99 of battle creation and of the vote (N workers, the four sim
    agents), CPU per vote, beside a bare insert into the same database; checks no vote was lost or
    counted twice."""
    from .arena.perf import measure_arena_perf, require_empty_store
    from .arena.store import ArenaError

    if "://" not in db and db != ":memory:":
        require_writable_file(Path(db), "--db", sqlite=True)
    try:
        require_empty_store(db)  # before anything starts: a bad URL, a store with battles
    except (ArenaError, ValueError) as e:
        fail(str(e))
    try:
        rep = measure_arena_perf(db, workers=workers, voters=voters, duration_s=duration_s, warmup_s=warmup_s)
    except (ValueError, RuntimeError, ArenaError) as e:
        fail(str(e), 1)
    print_json(rep)
    bad = {k: n for k in ("lost", "unacknowledged", "double_counted") if (n := rep["integrity"][k])}
    if bad:  # the figures stand only if every acknowledged vote is stored once
        fail("integrity check failed: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in bad.items()), 1)


@pinpoint_app.command("study")
def pinpoint_study_cmd(
    samples: Path = typer.Option(..., "--samples", help="samples JSON (released demo_samples.json shape)"),
    responses: Path = typer.Option(
        ..., "--responses", help="JSONL the answers are appended to (pointlab score localization --pred)"
    ),
    setting: str = typer.Option("gt", "--setting", help="unguided, model or gt (App. D.1)"),
    model_fsd: Optional[Path] = typer.Option(
        None, "--model-fsd", help='model descriptions JSONL {"id", "prediction"} for --setting model'
    ),
    port: int = typer.Option(8020, "--port", min=0, max=65535, help="port on 127.0.0.1"),
) -> None:
    """Serve the human localization study page (PinpointQA App. D) on http://127.0.0.1:PORT/."""
    from .serve import check_port, public_url
    from .localization import StudyDataError, create_localization_app

    check_port("127.0.0.1", port)
    try:
        web = create_localization_app(samples, responses, setting=setting, model_fsd_path=model_fsd)
    except (StudyDataError, ValueError) as e:
        fail(str(e))
    serve(web, "127.0.0.1", port, [f"localization study on {public_url('127.0.0.1', port)}/ (answers -> {responses})"])


@act_app.command("server")
def act_server(
    db: str = typer.Option(
        "pointlab-study.sqlite",
        "--db",
        help="the study store: postgresql+psycopg://user@host/db (stations at several labs) or a SQLite file",
    ),
    listen: str = typer.Option("tcp/127.0.0.1:7447", "--listen", help="Zenoh endpoint stations connect to"),
    credentials: Optional[Path] = typer.Option(
        None, "--credentials", help="Zenoh user:password lines, one per station (docs/stations.md)"
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="address the web app binds to"),
    port: int = typer.Option(8020, "--port", min=0, max=65535, help="port of the web app"),
    tls_cert: Optional[Path] = typer.Option(None, "--tls-cert", help="server certificate (PEM) for a tls/ --listen"),
    tls_key: Optional[Path] = typer.Option(None, "--tls-key", help="its private key (PEM)"),
    lease_s: float = typer.Option(3.0, "--lease", min=0.5, max=60.0, help="seconds until a silent station is offline"),
    operator_token: Optional[str] = typer.Option(
        None, "--operator-token", envvar="POINTLAB_OPERATOR_TOKEN", help="secret of the console (default: random)"
    ),
    recordings: Optional[Path] = typer.Option(
        None,
        "--recordings",
        help="folder of the stations' trial recordings, DIR/STATION/... (default: recordings/ beside a SQLite "
        "--db, else ./recordings)",
    ),
    keep_recordings: bool = typer.Option(
        True, "--keep-recordings/--no-keep-recordings", help="receive the stations' recordings (else they stay there)"
    ),
) -> None:
    """Run a study server: the web app, the store and the Zenoh endpoint robot stations join
    (``pointlab act station --connect ...``). Stop it with Ctrl-C."""
    from pointlab.bridge.stations.security import station_acl
    from pointlab.bridge.stations.wire import ENDPOINT_RE
    from pointlab.bridge.stations.server import StudyServer
    from pointlab.bridge.study.store import Store, StoreError

    from .serve import check_port, public_url as url_of
    from .stations_app import create_server_app

    if operator_token is not None and len(operator_token) < 8:
        fail("--operator-token must be at least 8 characters (it is the console's password)")
    if not ENDPOINT_RE.match(listen):
        fail(f"--listen {listen!r}: a Zenoh endpoint such as tcp/0.0.0.0:7447")
    check_port(host, port)
    if "://" not in db:
        require_writable_file(Path(db), "--db", sqlite=True)
    if recordings is None:  # where `act export --db` looks by default, for a SQLite store
        from pointlab.bridge.recording.layout import default_recordings_dir

        recordings = default_recordings_dir(db) if "://" not in db else Path("recordings").resolve()
    if keep_recordings and ((why := unwritable(recordings)) is not None or recordings.is_file()):
        fail(f"--recordings {recordings}: {why or 'is a file, not a folder'}")
    try:
        store = Store(db)
    except StoreError as e:
        fail(str(e), 1)
    acl = None
    if credentials is not None:
        try:
            acl = station_acl(credentials)
        except ValueError as e:
            fail(f"--credentials: {e}")
    tls = None
    if listen.startswith("tls/"):
        if tls_cert is None or tls_key is None or not tls_cert.is_file() or not tls_key.is_file():
            fail("a tls/ --listen needs --tls-cert and --tls-key (PEM files)")
        tls = {"listen_certificate": str(tls_cert), "listen_private_key": str(tls_key)}
    elif tls_cert is not None or tls_key is not None:
        fail("--tls-cert and --tls-key are for a tls/ --listen endpoint")
    token = operator_token or secrets.token_urlsafe(16)
    server = StudyServer(
        store,
        listen=[listen],
        credentials_file=str(credentials) if credentials else None,
        acl=acl,
        tls=tls,
        lease_s=lease_s,
        recordings_dir=recordings if keep_recordings else None,
    )
    from pointlab.bridge.stations.wire import StationsError

    try:
        server.open()  # before the URL is printed: a busy port or a refused certificate is one line
    except StationsError as e:
        store.close()
        fail(str(e), 1)
    app = create_server_app(server, operator_token=token)
    try:
        serve(
            app,
            host,
            port,
            [
                f"Study server: store={db.split('@')[-1]} stations connect to {listen}",
                f"Station console: {url_of(host, port)}/stations#token={token}",
                "Stop with Ctrl-C.",
            ],
        )
    finally:
        store.close()
