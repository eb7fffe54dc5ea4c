"""Trapezoidal profiles, worked out by hand: 100 mm at 100 mm/s and 1000 mm/s^2 accelerates for
0.1 s (5 mm), cruises 90 mm for 0.9 s and decelerates for 0.1 s (5 mm): 1.1 s."""

from __future__ import annotations

import math

import pytest

from pointlab.sim_mock.trapezoid import trapezoid_duration_s, trapezoid_fraction


def test_durations():
    assert trapezoid_duration_s(100.0, 100.0, 1000.0) == pytest.approx(1.1)
    assert trapezoid_duration_s(-100.0, 100.0, 1000.0) == pytest.approx(1.1)  # direction does not matter
    assert trapezoid_duration_s(5.0, 100.0, 1000.0) == pytest.approx(2 * math.sqrt(0.005))  # triangle: d < v^2/a
    assert trapezoid_duration_s(10.0, 100.0, 1000.0) == pytest.approx(0.2)  # d = v^2/a: no cruise
    assert trapezoid_duration_s(0.0, 0.0, 0.0) == 0.0
    with pytest.raises(ValueError):
        trapezoid_duration_s(1.0, 0.0, 1000.0)


def test_fractions_along_the_profile():
    total = 1.1
    assert trapezoid_fraction(0.05, 100.0, 100.0, 1000.0, total) == pytest.approx(1.25 / 100)  # 1/2 a t^2
    assert trapezoid_fraction(0.6, 100.0, 100.0, 1000.0, total) == pytest.approx(55.0 / 100)  # 5 + 100 * 0.5
    assert trapezoid_fraction(1.05, 100.0, 100.0, 1000.0, total) == pytest.approx(98.75 / 100)
    assert trapezoid_fraction(-1.0, 100.0, 100.0, 1000.0, total) == 0.0
    assert trapezoid_fraction(1.2, 100.0, 100.0, 1000.0, total) == 1.0
    # triangle: half way in time is half way in distance
    t = 2 * math.sqrt(0.005)
    assert trapezoid_fraction(t / 2, 5.0, 100.0, 1000.0, t) == pytest.approx(0.5)


def test_a_stretched_profile_keeps_its_shape():
    # the same profile over 2.2 s (time scale 2): at 1.2 s it is where the natural one is at 0.6 s
    assert trapezoid_fraction(1.2, 100.0, 100.0, 1000.0, 2.2) == pytest.approx(0.55)
    assert trapezoid_fraction(0.055, 100.0, 100.0, 1000.0, 0.11) == pytest.approx(0.5)
