"""Round-robin ladder: every bot in a directory plays every other in seat-swapped pairs.

Ratings are the maximum-likelihood Elo fit of all games at once (Bradley–Terry on the
Elo scale, a draw counting half a win), with one virtual draw added to every pairing as
a weak prior so that a clean sweep still gives a finite rating. The 95% error bars come
from the inverse of the observed information (the Hessian of the log-likelihood).
Ratings are relative to ``rookie`` when it takes part (its rating is 0 by definition and
its error bar is 0), otherwise to the mean of all bots. ``ladder_document`` and
``write_ladder`` also rate and write env bots' round robins (``envs/ladder.py`` plays
them; their anchor is ``random``).

All games are played under one game: the defaults, or ``game_from``'s recorded
settings, so every bot faces the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum import scoring
from cosmic_curriculum.bots.external import EXEC_PREFIX, ExecSpec, stops_bots
from cosmic_curriculum.defaults import LADDER_PAIRS
from cosmic_curriculum.errors import BotError, EvaluationError
from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.evaluation.evaluate import MAX_BATCH_PAIRS, batch_seed, game_for
from cosmic_curriculum.system import fsio

if TYPE_CHECKING:
    from cosmic_curriculum.arena.settings import GameSettings

ELO_SCALE = math.log(10.0) / 400.0
LADDER_FILES = ("ladder.json", "ladder.md", "ladder.png")
ANCHOR = "rookie"


@dataclass(frozen=True)
class EloFit:
    ratings: NDArray[np.float64]
    err95: NDArray[np.float64]
    anchor: str | None


def fit_elo(
    games: NDArray[np.float64],
    points: NDArray[np.float64],
    names: list[str],
    prior_draws: float = 1.0,
    anchor_name: str = ANCHOR,
) -> EloFit:
    """Maximum-likelihood Elo ratings from a round robin.

    ``games[i, j]`` games between i and j (symmetric), ``points[i, j]`` the points i
    scored against j (win 1, draw ½). ``prior_draws`` virtual draws are added to every
    pairing that was played.
    """
    k = len(names)
    n = np.asarray(games, dtype=np.float64).copy()
    s = np.asarray(points, dtype=np.float64).copy()
    played = n > 0
    n[played] += prior_draws
    s[played] += prior_draws / 2.0
    r = np.zeros(k)
    centre = np.full((k, k), 1.0 / k)
    for _ in range(100):
        diff = r[:, None] - r[None, :]
        p = 1.0 / (1.0 + np.exp(-ELO_SCALE * diff))
        grad = ELO_SCALE * np.sum(s - n * p, axis=1)
        w = ELO_SCALE**2 * n * p * (1.0 - p)
        info = np.diag(w.sum(axis=1)) - w  # observed information (= -Hessian)
        # The likelihood ignores a common shift: fix the mean at zero while solving.
        step = np.linalg.solve(info + centre, grad)
        r = r + step - step.mean()
        if np.max(np.abs(step)) < 1e-9:
            break
    cov = np.linalg.pinv(info)
    anchor = anchor_name if anchor_name in names else None
    if anchor is not None:
        a = names.index(anchor)
        r = r - r[a]
        var = np.diag(cov) + cov[a, a] - 2.0 * cov[:, a]
    else:
        var = np.diag(cov)
    return EloFit(r, stats.Z95 * np.sqrt(np.clip(var, 0.0, None)), anchor)


def discover(bots_dir: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Loadable bot files in ``bots_dir`` (sorted) and the skipped ones with the reason."""
    from cosmic_curriculum.bots import bot_files, load_bot

    bots_dir = Path(bots_dir)
    if not bots_dir.is_dir():
        raise EvaluationError(f"--bots-dir {bots_dir}: not a directory; point it at your bots/")
    good: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in bot_files(bots_dir):
        try:
            load_bot(path)
        except BotError as exc:
            skipped.append((path, str(exc)))
        else:
            good.append(path)
    return good, skipped


@stops_bots
def run_ladder(
    bots_dir: Path,
    *,
    pairs: int = LADDER_PAIRS,
    out_dir: Path,
    seed: int = 0,
    game_from: Path | None = None,
    players: Sequence[str | Path | ExecSpec] = (),
) -> dict[str, Any]:
    """Play the round robin, fit ratings, write ``ladder.json``, ``ladder.md`` and
    ``ladder.png`` into ``out_dir``; return the JSON document (plus ``files``).
    ``players`` join the bots of ``bots_dir``: bot files or ``exec:`` programs (a
    program that fails stops the ladder; it is never skipped)."""
    from cosmic_curriculum.arena.match import play_pairs
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import as_source, load_bot, open_bot, source_name

    if pairs < 1:
        raise EvaluationError(f"--pairs {pairs}: need at least 1 seat-swapped pair per match")
    if seed < 0:
        raise EvaluationError(f"--seed {seed}: the seed must be a non-negative integer")
    found, skipped = discover(bots_dir)
    paths = [*found, *(as_source(p) for p in players)]
    if len(paths) < 2:
        raise EvaluationError(
            f"--bots-dir {bots_dir}: a ladder needs at least 2 loadable bot files, found "
            f"{len(paths)}" + (f" ({len(skipped)} unreadable)" if skipped else "")
        )
    bots = [open_bot(p) for p in paths]
    names = ladder_names(
        [(source_name(p), str(p), isinstance(p, ExecSpec)) for p in paths],
        [str(getattr(b, "name", "")) for b in bots],
    )
    game: GameSettings = GameSettings() if game_from is None else game_for(load_bot(game_from))
    k = len(paths)
    games = np.zeros((k, k))
    points = np.zeros((k, k))
    wins = np.zeros((k, k), dtype=np.int64)
    match_index = 0
    for i in range(k):
        for j in range(i + 1, k):
            # Batches of at most MAX_BATCH_PAIRS pairs: memory stays bounded at any --pairs.
            w = l_ = d = 0
            for batch in range(-(-pairs // MAX_BATCH_PAIRS)):
                n = min(MAX_BATCH_PAIRS, pairs - batch * MAX_BATCH_PAIRS)
                res = play_pairs(bots[i], bots[j], n, match_seed(seed, match_index, batch), game)
                o = np.asarray(res.outcomes)
                w += int((o == 1).sum())
                l_ += int((o == -1).sum())
                d += int((o == 0).sum())
            match_index += 1
            games[i, j] = games[j, i] = w + l_ + d
            points[i, j], points[j, i] = w + d / 2, l_ + d / 2
            wins[i, j], wins[j, i] = w, l_
    base = {"game": game.model_dump()}
    doc = ladder_document(names, paths, games, points, wins, pairs=pairs, seed=seed, base=base)
    doc["skipped"] = [{"path": str(p), "reason": why} for p, why in skipped]
    return write_ladder(doc, out_dir)


def match_seed(seed: int, match: int, batch: int) -> int:
    """The seed of batch ``batch`` of match ``match``: batch 0 is the match's whole seed
    of old (a ladder of at most MAX_BATCH_PAIRS pairs plays exactly as before)."""
    if batch == 0:
        return batch_seed(seed, match)
    state = np.random.SeedSequence([seed, match, batch]).generate_state(1, dtype=np.uint64)
    return int(state[0])


def ladder_names(sources: Sequence[tuple[str, str, bool]], said: Sequence[str]) -> list[str]:
    """Each ladder bot's name: a file's stem; a program's handshake name, else its stem.
    Names that would still be shared (two scripts run by one interpreter, one program at
    two levels, a handshake name taken by a file or the anchor) become the program's whole
    command line, or the file's path; the same bot given twice is refused.
    ``sources``: (stem, label, is a program) per bot; ``said``: each bot's own name."""
    names = [
        (name.strip() or stem) if program else stem
        for (stem, _, program), name in zip(sources, said, strict=True)
    ]
    stems = [n for n, (_, _, program) in zip(names, sources, strict=True) if not program]
    files = set(stems)
    shared = [
        (names.count(n) > 1) if program else (stems.count(n) > 1)
        for n, (_, _, program) in zip(names, sources, strict=True)
    ]
    for i, (_, label, program) in enumerate(sources):
        if program and (shared[i] or names[i] in files or names[i] == ANCHOR):
            names[i] = label.removeprefix(EXEC_PREFIX)
        elif shared[i]:
            names[i] = label
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise EvaluationError(f"ladder bot {twice[0]!r} is given twice; name each bot once")
    return names


def ladder_document(
    names: list[str],
    paths: Sequence[Any],
    games: NDArray[np.float64],
    points: NDArray[np.float64],
    wins: NDArray[np.int64],
    *,
    pairs: int,
    seed: int,
    base: dict[str, Any],
    anchor: str = ANCHOR,
) -> dict[str, Any]:
    """The ladder's JSON document from a round robin's results (``wins[i, j]``: games i
    won against j); ``base`` adds what the games were played under."""
    fit = fit_elo(games, points, names, anchor_name=anchor)
    order = np.argsort(-fit.ratings, kind="stable")
    rows = []
    for rank, i in enumerate(order, start=1):
        n_i = int(games[i].sum())
        won, lost = int(wins[i].sum()), int(wins[:, i].sum())
        drawn = n_i - won - lost
        score = scoring.score(won, drawn, n_i, if_none=None)
        rows.append(
            {
                "rank": rank,
                "bot": names[i],
                "path": str(paths[i]),
                "elo": round(float(fit.ratings[i]), 1),
                "err95": round(float(fit.err95[i]), 1),
                "games": n_i,
                "score": None if score is None else round(score, 4),
                "wins": won,
                "losses": lost,
                "draws": drawn,
            }
        )
    doc: dict[str, Any] = {
        "bots": names,
        "pairs_per_match": pairs,
        "seed": seed,
        "anchor": fit.anchor,
        **base,
        "ratings": rows,
        "points": points.tolist(),
        "games": games.astype(int).tolist(),
        "skipped": [],
    }
    return doc


def write_ladder(doc: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """``ladder.json``, ``ladder.md`` and ``ladder.png`` into ``out_dir``; ``doc`` plus
    ``files``."""
    from cosmic_curriculum.workspace.outputs import write_output

    out_dir = Path(out_dir)
    files = {
        key: out_dir / name
        for key, name in zip(("json", "table", "png"), LADDER_FILES, strict=True)
    }
    # Bot names come from file names, which need not be UTF-8: shown escaped everywhere.
    doc = fsio.without_surrogates_in(doc)
    out_dir.mkdir(exist_ok=True)  # its parent was checked (`--out-dir`)
    write_output(files["json"], fsio.dumps_json(doc), "--out-dir")
    write_output(files["table"], markdown_table(doc), "--out-dir")
    write_output(files["png"], _plot(doc), "--out-dir")
    doc["files"] = {key: fsio.without_surrogates(str(path)) for key, path in files.items()}
    return doc


def markdown_table(doc: dict[str, Any]) -> str:
    anchor = doc["anchor"] or "the mean"
    lines = [
        f"# Ladder ({doc['pairs_per_match']} {doc.get('pairing', 'seat-swapped pairs')} per "
        f"match, seed {doc['seed']})",
        "",
        f"Elo relative to {anchor}; ± is the 95% error of the joint maximum-likelihood fit.",
        "",
        "| rank | bot | Elo | ± 95% | games | score | W | L | D |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["ratings"]:
        lines.append(
            f"| {r['rank']} | {r['bot']} | {scoring.signed(r['elo'], 0)} | {r['err95']:.0f} | "
            f"{r['games']} | {r['score']:.3f} | {r['wins']} | {r['losses']} | {r['draws']} |"
        )
    return "\n".join(lines) + "\n"


def _plot(doc: dict[str, Any]) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(reversed(doc["ratings"]))  # best at the top
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.45 * len(rows)), constrained_layout=True)
    y = np.arange(len(rows))
    ax.errorbar(
        [r["elo"] for r in rows],
        y,
        xerr=[r["err95"] for r in rows],
        fmt="o",
        color="#1f6fd1",
        ecolor="0.4",
        capsize=4,
    )
    ax.set_yticks(y, [r["bot"] for r in rows])
    ax.axvline(0.0, color="0.8", lw=1, zorder=0)
    anchor = doc["anchor"] or "mean"
    ax.set_xlabel(f"Elo relative to {anchor} (95% error bars)")
    pairing = doc.get("pairing", "pairs")
    ax.set_title(f"Round robin, {doc['pairs_per_match']} {pairing} per match")
    ax.grid(axis="x", alpha=0.3)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()
