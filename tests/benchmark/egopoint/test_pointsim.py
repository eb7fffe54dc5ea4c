"""Point-Sim geometry (EgoPoint sec. 3.2.1): eq. (1) look-at, eq. (2) Rodrigues alignment, the
ray-cast validity check on trimesh scenes, and the target's 2D box; values worked out by hand."""

import math

import numpy as np
import pytest
import trimesh

from pointlab.benchmark.egopoint.pointsim import (
    intrinsics_from_vfov,
    look_at_rotation,
    optical_pose,
    project_point,
    ray_cast_valid,
    rodrigues_alignment,
    target_box_2d,
)


def test_look_at_eq1_by_hand():
    # forward +x, up +z: right = f x u = x x z = -y; camera up = (f x u) x f = -y x x = +z; back = -x
    R = look_at_rotation([2.0, 0, 0], [0, 0, 1])
    assert R == pytest.approx(np.array([[0, -1, 0], [0, 0, 1], [-1, 0, 0]]))
    # a target up and to the left: rows orthonormal, det +1, f maps to (0, 0, -1)
    f = np.array([1.0, 1.0, 0.5])
    R = look_at_rotation(f)
    assert R @ R.T == pytest.approx(np.eye(3)) and np.linalg.det(R) == pytest.approx(1.0)
    assert R @ (f / np.linalg.norm(f)) == pytest.approx([0, 0, -1])
    assert R[0, 2] == pytest.approx(0.0)  # the right axis stays horizontal (no roll)
    with pytest.raises(ValueError):
        look_at_rotation([0, 0, 3], [0, 0, 1])  # looking straight up: eq. (1) undefined
    with pytest.raises(ValueError):
        look_at_rotation([0, 0, 0])


def test_optical_pose_projects_target_to_centre():
    T = optical_pose([0, 0, 1.6], [3, 1, 0.8])
    K = intrinsics_from_vfov(110, 640, 480)
    assert project_point([3, 1, 0.8], T, K) == pytest.approx((319.5, 239.5))
    # a point 1 m above the target along world up appears above it (smaller v)
    assert project_point([3, 1, 1.8], T, K)[1] < 239.5


def test_intrinsics_from_vfov_by_hand():
    K = intrinsics_from_vfov(90, 640, 480)  # tan(45 deg) = 1 -> f = 240 px
    assert K == pytest.approx(np.array([[240, 0, 319.5], [0, 240, 239.5], [0, 0, 1]]))
    with pytest.raises(ValueError):
        intrinsics_from_vfov(180, 640, 480)


def test_rodrigues_eq2_by_hand():
    # x onto y: a quarter turn about +z
    assert rodrigues_alignment([1, 0, 0], [0, 1, 0]) == pytest.approx(
        np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]]), abs=1e-12
    )
    # 60 degrees in the x-z plane: R x = (cos 60, 0, sin 60)
    t = np.array([math.cos(math.pi / 3), 0, math.sin(math.pi / 3)])
    R = rodrigues_alignment([1, 0, 0], t)
    assert R @ [1, 0, 0] == pytest.approx(t)
    assert R @ [0, 1, 0] == pytest.approx([0, 1, 0])  # the rotation axis (-y or +y) is fixed
    assert rodrigues_alignment([0, 0, 2], [0, 0, 5]) == pytest.approx(np.eye(3))
    R = rodrigues_alignment([0, 0, 1], [0, 0, -1])  # opposite: a half turn
    assert R @ [0, 0, 1] == pytest.approx([0, 0, -1]) and np.linalg.det(R) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.normal(size=3), rng.normal(size=3)
        R = rodrigues_alignment(a, b)
        assert R @ (a / np.linalg.norm(a)) == pytest.approx(b / np.linalg.norm(b))
        # minimal: the rotation angle equals the angle between the vectors
        angle = math.acos(np.clip((np.trace(R) - 1) / 2, -1, 1))
        assert angle == pytest.approx(math.acos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1)))


def test_ray_cast_validity():
    target = trimesh.creation.box(extents=[0.2, 0.2, 0.2])
    target.apply_translation([3, 0, 0])
    wall = trimesh.creation.box(extents=[0.05, 1.0, 1.0])
    wall.apply_translation([1.5, 0, 0])
    tip = [0.0, 0.0, 0.0]
    blocked = ray_cast_valid(wall, tip, [3, 0, 0], target)
    # the wall's near face is at x = 1.5 - 0.025
    assert not blocked.valid and blocked.blocked_at_m == pytest.approx(1.475)
    assert blocked.target_distance_m == pytest.approx(2.9)  # target's near face at 3 - 0.1
    wall_aside = wall.copy()
    wall_aside.apply_translation([0, 2.0, 0])
    assert ray_cast_valid(wall_aside, tip, [3, 0, 0], target).valid
    # a wall behind the target does not count
    wall_behind = wall.copy()
    wall_behind.apply_translation([2.5, 0, 0])
    assert ray_cast_valid(wall_behind, tip, [3, 0, 0], target).valid
    # a wall between the target's near face and its centre, without a target mesh: blocks at 2.95 - 0.025
    thin = trimesh.creation.box(extents=[0.05, 1.0, 1.0])
    thin.apply_translation([2.95, 0, 0])
    assert ray_cast_valid(thin, tip, [3, 0, 0]).blocked_at_m == pytest.approx(2.925)
    assert ray_cast_valid(thin, tip, [3, 0, 0], target).valid  # ... but it is past the target's surface
    with pytest.raises(ValueError):
        ray_cast_valid(wall, [3, 0, 0], [3, 0, 0])


def test_target_box_2d_by_hand():
    # camera at the origin in the optical convention (identity pose), fx = fy = 240, c = (319.5, 239.5)
    K = intrinsics_from_vfov(90, 640, 480)
    box = trimesh.creation.box(extents=[0.4, 0.4, 0.4])
    box.apply_translation([0, 0, 2.0])
    # the near face z = 1.8 has the extreme projections: 319.5 +- 240 * 0.2 / 1.8
    u0, v0, u1, v1 = target_box_2d(box.vertices, np.eye(4), K, 640, 480)
    assert (u0, u1) == pytest.approx((319.5 - 240 * 0.2 / 1.8, 319.5 + 240 * 0.2 / 1.8))
    assert (v0, v1) == pytest.approx((239.5 - 240 * 0.2 / 1.8, 239.5 + 240 * 0.2 / 1.8))
    assert target_box_2d(box.vertices - [0, 0, 5.0], np.eye(4), K, 640, 480) is None  # behind
    assert target_box_2d(box.vertices + [50.0, 0, 0], np.eye(4), K, 640, 480) is None  # off to the side
