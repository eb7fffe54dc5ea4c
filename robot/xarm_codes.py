"""What the numbers from ``xarm-python-sdk`` mean, and which typed error each becomes.

Two kinds of numbers (see docs/robot.md for the lab table):

- the **API return code** of every SDK call (``0`` success). Codes 1 and 2 say the controller has
  an error / a warning; 3 is "no reply in time"; negative codes come from the SDK itself (``-1`` not
  connected). The names below are the SDK's ``APIState`` / ``XCONF.UxbusState``.
- the **controller error code** (``get_err_warn_code()``: C1 emergency stop button ... C21 kinematic
  error ... C31 collision); its text comes from the SDK's own table (``ControllerErrorCodeMap``).
"""

from __future__ import annotations

__all__ = [
    "API_CODES",
    "CONNECTION_CODES",
    "TIMEOUT_CODES",
    "POSE_NOT_REACHED",
    "API_EXCEPTION",
    "api_code_text",
    "controller_error_text",
]

# pointlab's own code: set_position returned 0 but the TCP is not at the target afterwards (the
# controller dropped the motion, e.g. one sent too soon after a state change).
POSE_NOT_REACHED = -100
API_EXCEPTION = -3  # the SDK's APIState.API_EXCEPTION; pointlab also uses it when an SDK call raised

API_CODES: dict[int, str] = {
    0: "success",
    1: "the controller has an error (read it with get_err_warn_code)",
    2: "the controller has a warning",
    3: "no reply from the controller in time",
    4: "reply length error",
    5: "reply sequence number error",
    6: "reply protocol error",
    7: "reply register mismatch",
    8: "could not send to the controller",
    9: "the arm is not ready to move (motion not enabled, state not 0, or mode not 0)",
    10: "command invalid or failed on the controller",
    11: "other controller error",
    12: "parameter error",
    41: "vacuum gripper did not reach the requested state in time",
    100: "motion did not finish in time",
    -1: "not connected",
    -2: "not ready (motion not enabled or state not set)",
    API_EXCEPTION: "the SDK raised an exception (a reply it could not read, or a bad parameter)",
    -8: "target out of range (rejected by the SDK)",
    -9: "emergency stop: the arm stopped while waiting for the motion",
    POSE_NOT_REACHED: "the call succeeded but the TCP did not reach the target",
}

CONNECTION_CODES = frozenset({-1, 8})
TIMEOUT_CODES = frozenset({3, 100})


def api_code_text(code: int) -> str:
    """A one-line meaning of an SDK return code."""
    return API_CODES.get(int(code), "unknown SDK code")


def controller_error_text(code: int) -> str:
    """Title of a controller error code from the SDK's table (``C21 Kinematic Error``)."""
    if not code:
        return "no controller error"
    try:
        from xarm.core.config.x_code import ControllerErrorCodeMap

        entry = ControllerErrorCodeMap.get(int(code)) or ControllerErrorCodeMap.get("other")
        return f"C{int(code)} {entry['en']['title']}"
    except Exception:  # the SDK table is a nicety: never let it hide the code itself
        return f"C{int(code)}"
