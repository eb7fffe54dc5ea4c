"""The operator's *Abort trial* mid-motion, in Chromium, over the real session (ROS node set, sim arm
and camera): the arm stops in a controlled way (no fault, no e-stop), the participant reads why the
trial does not count and gets the same slot again; when the repeats run out the block ends short
and the results page flags it. Issue 20, "Must show"."""

from __future__ import annotations

import time

import pytest

from .act_live import live_act

pytestmark = [pytest.mark.browser, pytest.mark.ros, pytest.mark.slow]


def _abort_mid_motion(live, op_page, world) -> None:
    deadline = time.monotonic() + 30
    while not world.arm.moving:  # the abort comes in the middle of the pick
        assert time.monotonic() < deadline, "the arm never moved"
        time.sleep(0.01)
    op_page.click("#abort")


def test_operator_abort_mid_motion_in_chromium(chromium, tmp_path, ros_env):
    with live_act(tmp_path / "abort.sqlite", ros_env, time_scale=0.5) as live:
        world = live.session.world.sim
        ctx = chromium.new_context(viewport={"width": 1200, "height": 900})
        op = ctx.new_page()
        op.goto(f"{live.base_url}/operator#token={live.operator_token}")
        op.wait_for_selector("#agents input[value='sim-oracle']")
        for name in ("sim-noisy", "human"):
            op.uncheck(f"#agents input[value='{name}']")
        op.fill("#tpa", "1")
        op.fill("#max-repeats", "1")  # one repeat after an abort, then an abort uses up the slot
        op.fill("#reveal-low", "0")
        op.fill("#reveal-high", "0")
        op.click("#create-study")
        op.wait_for_function("document.querySelector('#study').options.length > 0")
        op.click("#invite")
        url = op.wait_for_selector("a.invite-link").get_attribute("href")
        sid = int(op.eval_on_selector("#study", "e => e.value"))

        p = ctx.new_page()
        p.goto(url)
        p.wait_for_selector("#setup-box:not(.hidden)")
        p.click("#start-block")
        for attempt in range(2):
            p.wait_for_selector("#trial-box:not(.hidden)", timeout=30000)
            if attempt == 1:
                # the trial box stays up after the abort notice; the repeat shows once the server's
                # next state (which may come after the trial_result) reaches the page
                p.wait_for_function(
                    "document.querySelector('#trial-title').textContent.includes('again')", timeout=30000
                )
            title = p.inner_text("#trial-title")
            assert "trial 1" in title and (("again" in title) == (attempt == 1)), title
            assert p.inner_text("#action") == "pick"  # a pick slot stays a pick
            p.fill("#instruction", "pick up the red cube")
            p.click("#send")
            _abort_mid_motion(live, op, world)
            # this attempt's own notice (the first attempt's may still be on the page until the
            # second's trial_started clears it)
            expected = "The same trial is offered again." if attempt == 0 else "repeats are used up"
            p.wait_for_function(
                "t => document.querySelector('#notice').textContent.includes(t)", arg=expected, timeout=30000
            )
            notice = p.inner_text("#notice")
            assert "does not count" in notice and "the operator stopped the trial" in notice
            # a controlled stop: no fault, no e-stop, the arm ready; the console shows no stop banner
            st = live.session.arm_node.arm.state()
            assert st.fault is None and st.estopped is False and world.arm.estopped is False
            assert live.session.station.stopped is False
            assert op.is_hidden("#stopped-banner")
            assert world.arm.attached is None  # the pick slot: the gripper was opened in the recovery
        rows = live.store.trials(study_id=sid)
        assert [(r["outcome"], r["abort"]["code"], r["robot_outcome"], r["number"]) for r in rows] == [
            ("aborted", "operator_abort", "halted", 1),
            ("aborted", "operator_abort", "halted", 2),
        ]
        assert all(r["robot_error"] is None for r in rows)
        # the slot is used up: the block ends short, the questionnaire follows
        p.wait_for_selector("#sus-box:not(.hidden)", timeout=30000)
        res = ctx.new_page()
        res.goto(f"{live.base_url}/results#token={live.operator_token}&study={sid}")
        res.wait_for_selector("#short-section:not(.hidden)", timeout=20000)
        (row,) = res.eval_on_selector_all("#short-blocks tr", "rs => rs.map(r => r.innerText)")
        assert "sim-oracle" in row and "Agent 1" in row
        assert res.inner_text("#agents tr[data-agent='sim-oracle'] td.short") == "1"
        assert res.inner_text("#agents tr[data-agent='sim-oracle'] td.aborted") == "2"
        ctx.close()
