"""``pointlab sim xarm-controller``: the xArm controller emulator as a standalone process."""

from __future__ import annotations

import threading

import typer

from pointlab.benchmark.clikit import fail, print_json

from .cli import sub

sim_app = sub.group("sim")


@sim_app.command("xarm-controller")
def xarm_controller_cmd(
    port: int = typer.Option(
        5020, "--port", min=0, max=65535, help="command port (502, the SDK's, needs privileges; 0: any free port)"
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="loopback address to bind (127.x.y.z)"),
    report_port: int = typer.Option(
        30001, "--report-port", min=0, max=65535, help="normal report port (the SDK uses 30001)"
    ),
    rich_report_port: int = typer.Option(
        30002, "--rich-report-port", min=0, max=65535, help="rich report port (the SDK's default report, 30002)"
    ),
    real_report_port: int = typer.Option(
        30003, "--real-report-port", min=0, max=65535, help="real-time report port (the SDK uses 30003)"
    ),
    time_scale: float = typer.Option(1.0, "--time-scale", help="motion duration factor (1 = realistic)"),
    settle_drop_probability: float = typer.Option(
        0.0,
        "--settle-drop-probability",
        min=0.0,
        max=1.0,
        help="chance that a motion sent within 0.1 s of set_state(0) is dropped, as a real controller sometimes "
        "does (0: never)",
    ),
    tool: str = typer.Option("lite_gripper", "--tool", help="mounted tool: lite_gripper or lite_vacuum"),
    arm: str = typer.Option(
        "kinematic",
        "--arm",
        help="the arm behind the controller: kinematic (joints and "
        "time only) or mujoco (the MuJoCo Lite 6 on the default "
        "tabletop: contacts, grasps by physics)",
    ),
) -> None:
    """Serve a Lite 6 controller that xarm-python-sdk connects to.

    Prints {"host", "port", "report_port", "report_ports", "robot"} (robot: the --robot spec for
    pointlab act) and serves until interrupted. Exit 2: bad option or a port is taken.
    """
    from .xarm_controller import XArmControllerEmulator

    if time_scale <= 0:
        fail("--time-scale must be positive")
    if arm not in ("kinematic", "mujoco"):
        fail(f"--arm must be kinematic or mujoco, got {arm!r}")
    backend = None
    if arm == "mujoco":
        from .arm_backend import world_backend
        from .world import SimWorld

        try:
            backend = world_backend(SimWorld(tool=tool), time_scale=time_scale)
        except ValueError as e:
            fail(str(e))
    try:
        emu = XArmControllerEmulator(
            host,
            port,
            report_port,
            rich_report_port=rich_report_port,
            real_report_port=real_report_port,
            time_scale=time_scale,
            tool=tool,
            settle_drop_probability=settle_drop_probability,
            backend=backend,
        )
        emu.start()
    except ValueError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot bind {host}:{port} / {report_port}, {rich_report_port}, {real_report_port}: {e}")
    print_json(
        {
            "host": emu.host,
            "port": emu.port,
            "report_port": emu.report_port,
            "report_ports": emu.report_ports,
            "robot": f"xarm:{emu.host}:{emu.port}",
        }
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        emu.stop()
