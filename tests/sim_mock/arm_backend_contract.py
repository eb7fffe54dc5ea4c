"""What every ``sim_mock.arm_backend.ArmBackend`` must do, checked by behaviour (an ``isinstance``
against the runtime-checkable Protocol only sees method names): the tests of each backend call
``check_contract`` with a way to let its motions finish."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.sim_mock.arm_backend import JOINT_LIMIT_ERROR, ArmBackend, PlanningError


def check_contract(backend: ArmBackend, wait) -> None:
    """``wait(backend)`` returns once the running motion has ended (a fake clock advanced, or real
    time passed)."""
    q0 = np.asarray(backend.joints_rad(), float)
    assert q0.shape == (6,) and np.all(np.isfinite(q0))
    lim = np.asarray(backend.joint_limits_rad, float)
    assert lim.shape == (6, 2) and np.all(lim[:, 0] < lim[:, 1])
    # fk is a rigid transform and ik inverts it (no motion either way)
    T = np.asarray(backend.fk(q0), float)
    assert T.shape == (4, 4) and np.allclose(T[3], [0, 0, 0, 1])
    assert np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-9)
    q_ik = backend.ik(T, q0)
    assert q_ik is not None and np.allclose(backend.fk(q_ik), T, atol=1e-6)
    assert np.array_equal(backend.joints_rad(), q0) and not backend.moving()
    # a joint move inside the limits: started, then ended at its target
    target = q0 + np.array([0.2, 0.0, 0.0, 0.0, 0.0, -0.1])
    duration = backend.move_joints(target, 1.0, 10.0)
    assert duration > 0 and backend.moving()
    wait(backend)
    assert not backend.moving() and np.allclose(backend.joints_rad(), target, atol=1e-6)
    # a target beyond a limit is refused with C23 and nothing moves
    beyond = np.asarray(backend.joints_rad(), float).copy()
    beyond[1] = lim[1, 1] + 0.1
    here = np.asarray(backend.joints_rad(), float).copy()
    with pytest.raises(PlanningError) as e:
        backend.move_joints(beyond, 1.0, 10.0)
    assert e.value.code == JOINT_LIMIT_ERROR
    assert not backend.moving() and np.allclose(backend.joints_rad(), here)
    # stop when idle is a no-op; the tool takes every state it documents
    backend.stop()
    assert np.allclose(backend.joints_rad(), here)
    for closed in (True, False, None):
        backend.set_tool(closed)
