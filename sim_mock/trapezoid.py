"""Rest-to-rest trapezoidal (or, for short moves, triangular) speed profiles: the timing of every
simulated Lite 6 motion, as the xArm controller plans its linear and joint moves.

Units are whatever the caller uses consistently (m, m/s, m/s^2 or rad, rad/s, rad/s^2); times in s.
"""

from __future__ import annotations

import math

__all__ = ["trapezoid_duration_s", "trapezoid_fraction"]


def trapezoid_duration_s(distance: float, speed: float, acc: float) -> float:
    """Time to travel ``distance`` from rest to rest with peak ``speed`` and acceleration ``acc``.

    Raises:
        ValueError: ``speed`` or ``acc`` not positive (a distance of 0 takes 0 s whatever they are).
    """
    d = abs(float(distance))
    if d == 0.0:
        return 0.0
    if not (speed > 0 and acc > 0):
        raise ValueError(f"speed and acceleration must be positive, got {speed}, {acc}")
    if d >= speed * speed / acc:  # reaches the peak speed: accelerate, cruise, decelerate
        return d / speed + speed / acc
    return 2.0 * math.sqrt(d / acc)  # triangular: never reaches the peak


def trapezoid_fraction(t_s: float, distance: float, speed: float, acc: float, total_s: float) -> float:
    """Fraction (0..1) of ``distance`` covered ``t_s`` after the start of the profile above, whose
    duration is ``total_s`` (``trapezoid_duration_s``, possibly scaled: the profile is then
    stretched in time)."""
    d = abs(float(distance))
    if d == 0.0 or total_s <= 0.0 or t_s >= total_s:
        return 1.0
    if t_s <= 0.0:
        return 0.0
    # Work on the unscaled profile and map time by the ratio: the shape is the same.
    natural = trapezoid_duration_s(d, speed, acc)
    t = t_s * natural / total_s
    t_acc = min(speed / acc, natural / 2.0)
    v_peak = acc * t_acc
    if t < t_acc:
        s = 0.5 * acc * t * t
    elif t < natural - t_acc:
        s = 0.5 * acc * t_acc * t_acc + v_peak * (t - t_acc)
    else:
        s = d - 0.5 * acc * (natural - t) ** 2
    return min(max(s / d, 0.0), 1.0)
