"""A Point-Battle arena's votes as a published bundle (``pointlab bench arena-publish``,
docs/arena.md "Publishing the votes").

The votes are released in the form Chatbot Arena releases its battles (FastChat's
``fastchat/serve/monitor/clean_battle_data.py``, ``--mode conv_release``): one record per vote with
``question_id``, ``model_a``, ``model_b``, ``winner`` (``model_a``, ``model_b``, ``tie``,
``tie (bothbad)``), ``judge`` (``arena_user_`` and a sanitised id), ``turn``, ``anony`` and ``tstamp``,
plus what a pointing battle has instead of a conversation: the instruction, the image's SHA-256 and
source, its size, each model's points and the battle's times.

Filters, applied in this order, each counted in ``filters.json`` (FastChat's first, then ours):

- ``flagged``: the voter's session was flagged by the arena's anti-abuse rule (all votes one side);
- ``error``: a model's answer failed (a call error or a timeout; FastChat drops battles with its
  ``ERROR_WORDS``);
- ``leaked_identity``: an answer's raw text names a model or its maker (FastChat's
  ``IDENTITY_WORDS``, lower-cased, and every model name of the arena): the voter could have known;
- ``duplicate``: the same voter voting again on the same image, instruction and pair of models (the
  first vote is kept; FastChat deduplicates over-represented prompts, which a pointing arena with a
  curated image set does not have).

The voter's id is ``sha256(session id)`` cut to 16 hex digits: the same voter gets the same id across
the release, and the session cookie cannot be recovered from it.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Any, Iterable

from pointlab.benchmark.bundle import finish_bundle, not_empty
from pointlab.benchmark.records import dumps_json, finite_json

__all__ = ["IDENTITY_WORDS", "release_votes", "publish_arena", "RELEASE_FORMAT", "RELEASE_VERSION"]

RELEASE_FORMAT = "pointlab-arena-bundle"
RELEASE_VERSION = 1

# FastChat clean_battle_data.py's IDENTITY_WORDS (lower-cased there too)
IDENTITY_WORDS = tuple(
    w.lower()
    for w in (
        "vicuna", "lmsys", "koala", "uc berkeley", "open assistant", "laion", "chatglm", "chatgpt", "gpt-4",
        "openai", "anthropic", "claude", "bard", "palm", "lamda", "google", "gemini", "llama", "qianwan", "qwen",
        "alibaba", "mistral", "zhipu", "KEG lab", "01.AI", "AI2", "Tülu", "Tulu", "deepseek", "hermes", "cohere",
        "DBRX", "databricks",
    )
)  # fmt: skip
# stored vote (``store.VOTE_CHOICES`` values) -> Chatbot Arena's winner
WINNER = {"model_a": "model_a", "model_b": "model_b", "both_good": "tie", "both_bad": "tie (bothbad)"}
FILTERS = ("flagged", "error", "leaked_identity", "duplicate")


def _judge(session_id: str) -> str:
    return "arena_user_" + hashlib.sha256(session_id.encode()).hexdigest()[:16]


def _failed(answer: Any) -> bool:
    return not isinstance(answer, dict) or bool(answer.get("error"))


def _leak(answer: Any, words: Iterable[str]) -> str | None:
    text = str((answer or {}).get("raw_text") or "").lower() if isinstance(answer, dict) else ""
    return next((w for w in words if w and w in text), None)


def release_votes(battles: list[dict], model_names: Iterable[str] = ()) -> tuple[list[dict], dict[str, Any]]:
    """The released records of ``battles`` (``ArenaStore.voted_battles()`` rows, vote order) and the
    filters' counts ``{"votes", "released", "dropped": {filter: n}, "leaked_words": {word: n}}``
    (module docstring)."""
    words = tuple(dict.fromkeys([*IDENTITY_WORDS, *(m.lower() for m in model_names if m)]))
    dropped = {f: 0 for f in FILTERS}
    leaked: dict[str, int] = {}
    seen: set[tuple] = set()
    out = []
    for b in battles:
        if b.get("flagged"):
            dropped["flagged"] += 1
            continue
        if _failed(b.get("answer_a")) or _failed(b.get("answer_b")):
            dropped["error"] += 1
            continue
        word = _leak(b.get("answer_a"), words) or _leak(b.get("answer_b"), words)
        if word is not None:
            dropped["leaked_identity"] += 1
            leaked[word] = leaked.get(word, 0) + 1
            continue
        key = (
            b["session_id"],
            b["image_sha256"],
            " ".join(str(b["instruction"]).lower().split()),
            frozenset((b["model_a"], b["model_b"])),
        )
        if key in seen:
            dropped["duplicate"] += 1
            continue
        seen.add(key)
        out.append(
            {
                "question_id": b["id"],
                "model_a": b["model_a"],
                "model_b": b["model_b"],
                "winner": WINNER[b["vote"]],
                "judge": _judge(b["session_id"]),
                "turn": 1,
                "anony": True,  # names are shown only after the vote (docs/arena.md, "Blindness")
                "tstamp": b["voted_unix_s"],
                "instruction": b["instruction"],
                "image_sha256": b["image_sha256"],
                "image_source": b["image_source"],
                "image_size": [b["width"], b["height"]],
                "points_a": (b.get("answer_a") or {}).get("points_px", []),
                "points_b": (b.get("answer_b") or {}).get("points_px", []),
                "sampler": b.get("sampler"),
                "created_unix_s": b["created_unix_s"],
                "shown_unix_s": b.get("shown_unix_s"),
            }
        )
    return out, {"votes": len(battles), "released": len(out), "dropped": dropped, "leaked_words": leaked}


def _ratings(released: list[dict], settings) -> dict[str, Any]:
    from pointlab.benchmark.ratings import compute_ratings, parse_vote

    from .leaderboard import rating_kwargs, win_matrix

    stored = {v: k for k, v in WINNER.items()}  # the ratings' vote form (PointArena's names)
    votes = [
        parse_vote({"model_a": r["model_a"], "model_b": r["model_b"], "winner": stored[r["winner"]]}) for r in released
    ]
    per_model: dict[str, int] = {}
    for v in votes:
        for m in (v.model_a, v.model_b):
            per_model[m] = per_model.get(m, 0) + 1
    out: dict[str, Any] = {"few_votes_below": settings.few_votes, "votes_per_model": per_model}
    for ties in ("exclude", "half"):  # PointArena left ties out; Chatbot Arena counts them half
        kw = rating_kwargs(settings, ties)
        table: dict[str, dict[str, Any]] = {}
        for method in ("bt", "elo"):
            for m, r in compute_ratings(votes, method, **kw).items():
                table.setdefault(m, {"model": m, "votes": per_model.get(m, 0)})[method] = r
        for m, row in table.items():
            row["few_votes"] = per_model.get(m, 0) < settings.few_votes
        models = sorted(table, key=lambda m: -table[m]["bt"]["rating"])
        frac, games = win_matrix(models, votes, ties)
        out[f"ties_{ties}"] = {
            "models": [table[m] for m in models],
            "win_matrix": {"models": models, "win_fraction": frac, "games": games},
        }
    return out


def _ratings_figure(board: dict):
    from matplotlib.figure import Figure

    rows = board["models"]
    fig = Figure(figsize=(max(4.0, 1.2 * len(rows) + 1.5), 3.2))
    ax = fig.subplots()
    for i, r in enumerate(rows):
        bt = r["bt"]
        ax.errorbar(
            [i],
            [bt["rating"]],
            yerr=[[bt["rating"] - bt["ci_low"]], [bt["ci_high"] - bt["rating"]]],
            fmt="o",
            color="#8c959f" if r["few_votes"] else "#1f6feb",
            capsize=4,
        )
    ax.set_xticks(
        range(len(rows)),
        [f"{r['model']}\n({r['votes']} votes{', few' if r['few_votes'] else ''})" for r in rows],
        fontsize=8,
    )
    ax.set_ylabel("Bradley-Terry rating (95 % bootstrap)")
    ax.set_title("Point-Battle ratings (ties left out)", fontsize=10)
    return fig


def _votes_csv(released: list[dict]) -> str:
    cols = (
        "question_id",
        "model_a",
        "model_b",
        "winner",
        "judge",
        "tstamp",
        "instruction",
        "image_sha256",
        "image_source",
    )
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(cols)
    for r in released:
        text = r["instruction"]
        # a typed instruction starting with = + - @ runs as a formula in a spreadsheet (CSV injection)
        w.writerow(
            [("'" + text if c == "instruction" and text.startswith(("=", "+", "-", "@")) else r[c]) for c in cols]
        )
    return buf.getvalue()


def publish_arena(store, out: str | Path, *, settings, models: Iterable[str] = ()) -> dict[str, Any]:
    """Write the arena of ``store`` (``ArenaStore``) as a bundle in ``out``: ``votes.jsonl`` (the
    release, module docstring), ``votes.csv``, ``filters.json``, ``ratings.json`` (Bradley-Terry and
    online Elo with 95 % bootstrap intervals, ties left out and counted half, a ``few_votes`` marker
    under ``settings.few_votes``, the win matrices), ``plots/ratings.{svg,png}``, ``README.md``,
    ``bundle.json``, ``MANIFEST.sha256``. Returns ``bundle.json``'s content.

    Raises:
        ValueError: ``out`` exists and is not an empty folder.
    """
    from pointlab.bridge.study.plots import save_figure

    out = Path(out)
    if (why := not_empty(out)) is not None:
        raise ValueError(why)
    battles = store.voted_battles(include_flagged=True)
    names = set(models) | {b["model_a"] for b in battles} | {b["model_b"] for b in battles}
    released, counts = release_votes(battles, names)
    out.mkdir(parents=True, exist_ok=True)
    (out / "votes.jsonl").write_text("".join(dumps_json(r, compact=True) + "\n" for r in finite_json(released)))
    (out / "votes.csv").write_text(_votes_csv(released))
    rules = {
        "order": list(FILTERS),
        "identity_words": list(IDENTITY_WORDS),
        "model_names": sorted(names),
        "source": "FastChat fastchat/serve/monitor/clean_battle_data.py (IDENTITY_WORDS, error filter); docs/arena.md",
    }
    (out / "filters.json").write_text(dumps_json({**counts, "rules": rules}, indent=1))
    ratings = _ratings(released, settings) if released else {}
    (out / "ratings.json").write_text(dumps_json(finite_json(ratings), indent=1))
    if released:
        (out / "plots").mkdir()
        save_figure(_ratings_figure(ratings["ties_exclude"]), out / "plots" / "ratings")
    (out / "README.md").write_text(_readme(counts, ratings))
    return finish_bundle(
        out, fmt=RELEASE_FORMAT, version=RELEASE_VERSION, votes=counts["votes"], released=counts["released"]
    )


def _readme(counts: dict, ratings: dict) -> str:
    d = counts["dropped"]
    lines = [
        "# Point-Battle votes",
        "",
        f"{counts['votes']} votes; {counts['released']} released after the filters (in order): {d['flagged']} from "
        f"flagged sessions, {d['error']} with a failed answer, {d['leaked_identity']} whose answers named a model "
        f"or its maker, {d['duplicate']} repeated votes of one voter on the same image, instruction and pair. "
        "Records follow Chatbot Arena's released battles (FastChat `clean_battle_data.py`): `question_id`, "
        "`model_a`, `model_b`, `winner` (`model_a`, `model_b`, `tie`, `tie (bothbad)`), `judge`, `turn`, `anony`, "
        "`tstamp`, with the instruction, the image's SHA-256 and both models' points instead of conversations.",
        "",
        "Ratings: Bradley-Terry by maximum likelihood and online Elo, 95 % intervals from bootstrap resampling of "
        "the votes; `ties_exclude` leaves `tie` and `tie (bothbad)` out (PointArena), `ties_half` counts them half "
        "(Chatbot Arena). A model with fewer votes than `few_votes_below` is marked `few_votes`.",
        "",
    ]
    if ratings:
        lines += [
            "Ties left out (`ties_exclude`): `votes` counts every released vote of the model, `games` the ones "
            "that decided (the rest were ties).",
            "",
            "| model | votes | games | Bradley-Terry | 95 % CI |",
            "|---|---|---|---|---|",
        ]
        for r in ratings["ties_exclude"]["models"]:
            bt = r["bt"]
            mark = " (few votes)" if r["few_votes"] else ""
            lines.append(
                f"| {r['model']}{mark} | {r['votes']} | {bt['games']} | {bt['rating']:.0f} | "
                f"{bt['ci_low']:.0f}-{bt['ci_high']:.0f} |"
            )
        lines.append("")
    return "\n".join(lines)
