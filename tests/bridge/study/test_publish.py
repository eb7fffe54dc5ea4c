"""``pointlab act publish``: the study bundle (bridge/study/publish.py). Every number in the bundle is
computed again from the bundle's own trial table, and a few are worked out by hand."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import build_app
from pointlab.bridge.study.publish import PublishError, publish_study, study_numbers
from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.record import TrialResult

TOKENS = ("invite-token-p1-secret", "invite-token-p2-secret")


@pytest.fixture
def study_db(tmp_path):
    """Agents a and b, two participants. a: 3 judged (2 succeeded) and 1 aborted; b: 3 judged (1
    succeeded), one of them a refusal. SUS: a 75 and 85, b 50."""
    db = tmp_path / "act.sqlite"
    store = Store(db)
    sid = store.create_study(agents=["a", "b"], trials_per_agent=2, name="pilot", reveal_low_s=10, reveal_high_s=26)
    p1 = store.add_participant(sid, token=TOKENS[0], agent_order=["a", "b"], label="P1")
    p2 = store.add_participant(sid, token=TOKENS[1], agent_order=["b", "a"], label="P2")
    n = 0

    def trial(pid, block, agent, *, judge=None, robot="done", abort=None):
        nonlocal n
        n += 1
        fields = {"robot_outcome": robot}
        if abort:
            fields.update(outcome="aborted", abort={"code": abort, "detail": "stopped"})
        if robot == "refused":
            fields.update(outcome="failed", failure_stage="depth")
        tid = store.save_trial(
            TrialResult(trial_id=f"t{n}", agent=agent, instruction="pick up the red block", action="pick", **fields),
            study_id=sid,
            participant_id=pid,
            block=block,
            frames={"before": b"\xff\xd8before"},
        )
        if judge:
            store.set_judgement(tid, judge)

    trial(p1, 0, "a", judge="succeeded")
    trial(p1, 0, "a", robot="stopped", abort="estop")
    trial(p1, 0, "a", judge="failed")
    trial(p1, 1, "b", judge="succeeded")
    trial(p1, 1, "b", robot="refused")
    trial(p2, 0, "b", judge="failed")
    trial(p2, 1, "a", judge="succeeded")
    store.save_survey([5, 1, 4, 2, 4, 2, 4, 2, 4, 2], study_id=sid, participant_id=p1, block=0, agent="a")
    store.save_survey([3, 3, 3, 3, 3, 3, 3, 3, 3, 3], study_id=sid, participant_id=p1, block=1, agent="b")
    store.save_survey([5, 1, 5, 1, 4, 2, 4, 2, 4, 1], study_id=sid, participant_id=p2, block=1, agent="a")
    store.save_block_start(
        study_id=sid, participant_id=p1, block=0, method="sim_reset", frame_jpeg=b"\xff\xd8start", frame_index=7
    )
    store.set_scene_reference(sid, b"\xff\xd8reference")
    store.close()
    return db, sid


def test_the_bundle_holds_the_study_and_every_number_comes_from_its_own_trial_table(study_db, tmp_path):
    db, sid = study_db
    cal = tmp_path / "lab.json"
    cal.write_text('{"T_base_camera": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}')
    out = tmp_path / "bundle"
    store = Store(db)
    bundle = publish_study(store, sid, out, recordings_dir=tmp_path / "recordings", calibration=cal)
    store.close()
    assert (bundle["format"], bundle["version"]) == ("pointlab-study-bundle", 1)

    # the manifest: every file but itself, with its SHA-256 (sha256sum -c format)
    listed = {}
    for line in (out / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"MANIFEST.sha256"}
    assert set(listed) == on_disk
    assert all(hashlib.sha256((out / f).read_bytes()).hexdigest() == d for f, d in listed.items())
    for f in ("plots/success.svg", "plots/success.png", "plots/sus.svg", "plots/sus.png", "reference/scene.jpg"):
        assert (out / f).stat().st_size > 0, f
    assert (out / "reference/scene.jpg").read_bytes() == b"\xff\xd8reference"
    assert (out / "calibration/lab.json").read_bytes() == cal.read_bytes()

    # every number again, from the bundle's own files only
    trials = [json.loads(x) for x in (out / "trials.jsonl").read_text().splitlines()]
    surveys = [json.loads(x) for x in (out / "surveys.jsonl").read_text().splitlines()]
    config = json.loads((out / "study.json").read_text())
    again = study_numbers(config["study"], trials, surveys, config["participants"])
    results = json.loads((out / "results.json").read_text())
    assert {k: results[k] for k in again} == again

    # and by hand: a judged 3 (the aborted one left out), 2 succeeded; Wilson 95 % of 2/3:
    # centre (2/3 + 1.92073/3) / (1 + 3.84146/3) = 0.57309, half 1.95996/2.28049 * sqrt(2/27 + 3.84146/36)
    # = 0.36541 -> [0.2077, 0.9385]; b judged 3 (the refusal failed), 1 succeeded
    by = {a["agent"]: a for a in results["agents"]}
    assert (by["a"]["n_judged"], by["a"]["n_succeeded"], by["a"]["n_aborted"]) == (3, 2, 1)
    assert by["a"]["ci95"] == pytest.approx([0.2077, 0.9385], abs=1e-4)
    # b's stages: the refusal's depth, and its judged failure, which had no point (these records carry
    # none), is attributed to no_point (bridge.trials.attribution)
    assert (by["b"]["n_judged"], by["b"]["n_succeeded"], by["b"]["failure_stages"]) == (
        3,
        1,
        {"depth": 1, "no_point": 1},
    )
    # SUS by hand: P1 on a: odd items (5,4,4,4,4)-1 = 16, even 5-(1,2,2,2,2) = 16 -> 32 * 2.5 = 80;
    # P2 on a: (4+4+3+3+3) + (4+4+3+3+4) = 17 + 18 = 35 -> 87.5; b: all 3s -> 50
    assert sorted(by["a"]["sus"]) == [80.0, 87.5] and by["a"]["mean_sus"] == pytest.approx(83.75)
    assert by["b"]["sus"] == [50.0]
    table = {r["agent"]: r for r in csv.DictReader(io.StringIO((out / "results.csv").read_text()))}
    assert float(table["a"]["success_rate"]) == pytest.approx(2 / 3) and table["b"]["n_judged"] == "3"
    readme = (out / "README.md").read_text()
    assert "| a | 3 | 2 | 66.7 % | 20.8-93.9 % |" in readme and "10-26 s" in readme  # 0.93850.. rounds up

    # no invitation token anywhere (they are the participants' passwords)
    for f in on_disk:
        data = (out / f).read_bytes()
        assert not any(t.encode() in data for t in TOKENS), f
    software = json.loads((out / "software.json").read_text())
    assert software["calibration"]["sha256"] == hashlib.sha256(cal.read_bytes()).hexdigest()
    index = json.loads((out / "recordings.json").read_text())
    assert [i["trial_uid"] for i in index] == [f"t{i}" for i in range(1, 8)]


def test_publish_refuses_a_used_folder_and_an_unknown_study(study_db, tmp_path):
    db, sid = study_db
    store = Store(db)
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("keep me")
    with pytest.raises(PublishError):
        publish_study(store, sid, used)
    with pytest.raises(PublishError):
        publish_study(store, 999, tmp_path / "new")
    store.close()
    assert (used / "x").read_text() == "keep me" and not (tmp_path / "new").exists()
    run = CliRunner().invoke(
        build_app(), ["act", "publish", "--db", str(db), "--study", str(sid), "--out", str(tmp_path / "cli")]
    )
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["study_id"] == sid
    bad = CliRunner().invoke(build_app(), ["act", "publish", "--db", str(db), "--study", "9", "--out", str(used)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_a_pairwise_bundle_rates_its_own_episodes(tmp_path):
    """Agents p and q, three compared episodes (p wins two, q one, no ties) and one void one (its B half
    aborted). Bradley-Terry: pi_p / pi_q = 2, so the ratings are 1000 +/- 200 log10 2 = 1060.2 / 939.8."""
    from pointlab.bridge.study.export import export_study

    store = Store(tmp_path / "pw.sqlite")
    sid = store.create_study(agents=["p", "q"], trials_per_agent=3, name="ab", mode="pairwise")
    pid = store.add_participant(sid, token=TOKENS[0], agent_order=["p", "q"], label="P1")
    n = 0

    def half(agent, **fields):
        nonlocal n
        n += 1
        result = TrialResult(
            trial_id=f"h{n}", agent=agent, instruction="pick up the red block", action="pick", **fields
        )
        return store.save_trial(result, study_id=sid, participant_id=pid, block=0)

    for a, b, pref, pa, pb in (("p", "q", "A", 100, 20), ("q", "p", "B", 50, 100), ("p", "q", "B", 0, 60)):
        eid = store.create_episode(
            study_id=sid,
            participant_id=pid,
            instruction="pick up the red block",
            category="attribute",
            agent_a=a,
            agent_b=b,
        )
        store.set_episode_half(eid, "a", half(a, robot_outcome="done"))
        store.set_episode_half(eid, "b", half(b, robot_outcome="done"))
        store.finish_episode(eid)
        store.judge_episode(eid, preference=pref, progress_a=pa, progress_b=pb, reason="=cmd()")
    void = store.create_episode(
        study_id=sid, participant_id=pid, instruction="pick up the cube", category="object", agent_a="p", agent_b="q"
    )
    store.set_episode_half(void, "a", half("p", robot_outcome="done"))
    store.set_episode_half(
        void, "b", half("q", robot_outcome="stopped", outcome="aborted", abort={"code": "estop", "detail": "x"})
    )
    store.finish_episode(void)
    out = tmp_path / "bundle"
    publish_study(store, sid, out)
    exported = export_study(store, sid, tmp_path / "export", recordings_dir=tmp_path / "rec")
    store.close()

    trials = [json.loads(x) for x in (out / "trials.jsonl").read_text().splitlines()]
    episodes = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    config = json.loads((out / "study.json").read_text())
    again = study_numbers(config["study"], trials, [], config["participants"], episodes)
    results = json.loads((out / "results.json").read_text())
    assert {k: results[k] for k in again} == again
    pw = results["pairwise"]
    assert pw["episodes"] == {"compared": 3, "void": 1, "waiting": 0, "running": 0}
    assert pw["ratings"]["ratings"]["p"]["rating"] == pytest.approx(1060.206, abs=0.05)
    assert pw["win_matrix"]["p"]["q"] == {"wins": 2, "losses": 1, "ties": 0}
    # p's progress 100, 100, 0 -> mean 66.67; q's 20, 50, 60 -> 43.33
    assert pw["progress"]["p"]["mean"] == pytest.approx(200 / 3) and pw["progress"]["q"]["mean"] == pytest.approx(
        130 / 3
    )
    # the halves were judged from their progress: p succeeded twice (its two 100s)
    by = {a["agent"]: a for a in results["agents"]}
    assert (by["p"]["n_succeeded"], by["q"]["n_succeeded"], by["q"]["n_aborted"]) == (2, 0, 1)
    # the void episode's A half (p, it ran) is not rated: p's 4 stored halves, 3 counted
    assert by["p"]["n_trials"] == 3 and by["p"]["n_judged"] == 3
    readme = (out / "README.md").read_text()
    assert "| p | 1060 |" in readme and "episodes of a robot arm (UFACTORY Lite 6)" in readme
    # q's rating 939.8 with its interval written "low to high" (a negative bound would read -133--23)
    assert "| q | 940 | " in readme and " to " in readme.split("| q | 940 | ")[1].split("|")[0]
    assert "1 void (not rated" in readme
    for f in ("plots/pairwise.svg", "plots/pairwise.png", "episodes.csv"):
        assert (out / f).stat().st_size > 0, f
    rows = list(csv.DictReader(io.StringIO((tmp_path / "export" / "episodes.csv").read_text())))
    assert [r["winner"] for r in rows] == ["p", "p", "q", ""] and [r["void"] for r in rows] == ["False"] * 3 + ["True"]
    assert rows[0]["reason"] == "'=cmd()"  # a formula-like reason is shown as text in a spreadsheet
    assert exported["files"]["episodes_csv"] == "episodes.csv"
