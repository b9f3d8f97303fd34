"""Every user-facing default, in one place.

The config models of `stages.toml`, the command-line options and their help text read
their defaults from here, so a default is changed once and the help always says it.

This module imports nothing from the package and nothing heavy: every layer may import
it (`status` among them, which must start fast).
"""

from __future__ import annotations

from typing import Final, Literal

# --- the curriculum (stages.toml's top level and [defaults]) ---------------------------

# Failed retries after a stage's first failed attempt before the stage blocks for review.
MAX_RETRIES: Final = 2
# Trainer arguments of every attempt, before the stage's own flags.
STANDING_ARGS: Final = ("--reset-std", "0.3", "--ent-coef", "0.001")
# Stage 1's reference bot (later stages play the previous stage's bot).
REFERENCE_BOT: Final = "bots/rookie.json"
# The program that trains one attempt (a workspace-relative argv).
TRAINING_COMMAND: Final = ("scripts/run_training.sh",)
# Events told to a notify_command: all but the per-attempt passed/failed, which a
# multi-day run would repeat many times.
NOTIFY_ON: Final[tuple[Literal["blocked", "done", "attempt_error", "interrupted"], ...]] = (
    "blocked",
    "done",
    "attempt_error",
    "interrupted",
)
# Trainings per attempt (`candidates = K`; 1: one training, as without the key).
CANDIDATES: Final = 1
# Timesteps of each attempt ([defaults] timesteps, `run --timesteps`). The trainer's own
# default (TRAIN_TIMESTEPS) is for `train` alone: `run` always passes --timesteps.
STAGE_TIMESTEPS: Final = 20_000_000
# Where trainings run ([launcher] kind) and what each asks a Ray cluster for.
LAUNCHER_KIND: Final = "local"
RAY_NUM_GPUS: Final = 0.0
RAY_NUM_CPUS: Final = 1.0
# [launcher] address without one and without RAY_ADDRESS: `ray start --head` here.
RAY_DASHBOARD_ADDRESS: Final = "http://127.0.0.1:8265"
# Each call to the cluster's Jobs API ([launcher] request_timeout): connect, and each wait
# for the answer's bytes.
RAY_REQUEST_TIMEOUT_SECONDS: Final = 30.0
# [launcher] kind = "slurm": seconds before the job's time limit at which Slurm sends the
# trainer SIGUSR1 (signal_grace; it saves a step checkpoint and exits). Slurm checks the
# limit about every 30 s, so less than a minute may come late.
SLURM_SIGNAL_GRACE_SECONDS: Final = 120
# Each Slurm command (sbatch, squeue, scontrol, sacct, scancel, sinfo): a controller that
# does not answer in this time is reported, never waited for.
SLURM_COMMAND_TIMEOUT_SECONDS: Final = 30.0
# How often `run` asks the controller about each job (scontrol): often enough to follow
# a job within seconds, rarely enough for a shared controller.
SLURM_POLL_SECONDS: Final = 2.0
# How far back a resumed run looks in the cluster's accounting (sacct) for its jobs.
SLURM_ACCOUNTING_DAYS: Final = 60
# The workspace probe job of `run`'s preflight: how long it may wait for a node and run.
SLURM_PROBE_SECONDS: Final = 120.0
# A job PENDING with one of these reasons is refused by the cluster's limits: it would
# wait forever (the rest, e.g. Resources or Priority, clear as other jobs end; so does
# PartitionConfig, a new job's reason until the scheduler first looks at it).
SLURM_NEVER_CLEARS: Final = (
    "ReqNodeNotAvail", "PartitionTimeLimit", "PartitionNodeLimit", "PartitionDown",
    "PartitionInactive", "InvalidQOS", "InvalidAccount", "BadConstraints",
    "QOSMaxWallDurationPerJobLimit", "AssocMaxWallDurationPerJobLimit", "JobHeldAdmin",
    "QOSMaxGRESPerJob", "AssocMaxGRESPerJob", "DependencyNeverSatisfied",
)  # fmt: skip
# New launches of one training (or candidate) that a time limit or preemption ended
# ([launcher] max_continuations): each resumes its latest step checkpoint.
MAX_CONTINUATIONS: Final = 20
# The preset `init` copies (`init --bare` copies BARE_PRESET).
PRESET: Final = "default"
BARE_PRESET: Final = "bare"
# The environment a stage trains in ([env] kind): the embedded two-player arena game.
ENV_KIND: Final = "arena"

# --- Gymnasium stages (the built-in `train-env` trainer and env evaluator) ------------

# Steps an evaluation episode may take when the env has no TimeLimit of its own: an
# episode cut there counts as a failure (an env that never ends must not hang a run).
ENV_MAX_EPISODE_STEPS: Final = 10_000
# Episodes the env evaluator plays side by side (one batched numpy forward pass a step).
ENV_EVAL_BATCH: Final = 16
# Whether the env evaluator's bots (candidate and a bot reference) take their most likely
# action (True) or sample from the policy ([gate] deterministic = false): a policy that
# needs its noise, e.g. a greedy DoorKey policy stuck in a loop, passes only sampled.
ENV_EVAL_DETERMINISTIC: Final = True

# --- PettingZoo games (the seat-swapped game evaluator, `random` and `search:N`) -------

# Moves a game may take before it is cut and counted a draw (the record says how many
# were): a game that never ends must not hang a run.
GAME_MAX_MOVES: Final = 10_000
# Random moves `run` plays in each stage's game before any training (envs/game_check.py):
# enough to cross a game's first turns, not to finish a long one.
GAME_CHECK_MOVES: Final = 200
# Random games (and moves a game, at most) that tell whether search:N sees more than a
# player: chance or hidden moves (envs/game_probe.py). A few games cross both kinds.
GAME_PROBE_GAMES: Final = 4
GAME_PROBE_MOVES: Final = 200
# Games the game evaluator steps in lockstep (one batched forward per bot per move).
GAME_EVAL_BATCH: Final = 64
# A game's bots sample their moves unless the gate says `deterministic = true`: two
# greedy policies on a game without chance would replay one game in every pair.
GAME_EVAL_DETERMINISTIC: Final = False
# The deepest `search:N` reference (a full tic-tac-toe is 9; connect four's depth 4 takes
# a few tenths of a second a move).
SEARCH_MAX_DEPTH: Final = 12

# `train-env` ([trainer] in stages.toml): the SB3 algorithm, envs stepped side by side,
# timesteps between step_<n>.zip checkpoints, step checkpoints kept, seconds between
# @progress lines.
ENV_ALGO: Final = "PPO"
ENV_N_ENVS: Final = 8
# The envs of a [trainer] hyperparams_file entry without n_envs: rl-zoo3's own default,
# so the entry trains as the zoo trains it (an off-policy entry steps 1 env, not 8).
ZOO_N_ENVS: Final = 1
# How the envs are stepped ([trainer] vec_env): "auto" steps them in subprocesses only
# when that pays (two or more usable cores and one step costing ENV_SUBPROC_STEP_SECONDS
# or more, measured on the stage's env), else in the trainer's process.
ENV_VEC_ENV: Final = "auto"
ENV_SUBPROC_STEP_SECONDS: Final = 0.001
ENV_CHECKPOINT_EVERY_TIMESTEPS: Final = 10_000
ENV_KEEP_CHECKPOINTS: Final = 2
ENV_PROGRESS_SECONDS: Final = 2.0
# PPO's rollout per env (SB3's own 2048 is for one env: 8 envs x 256 = the same 2048 steps
# an update, so a small budget still gets many updates).
ENV_PPO_N_STEPS: Final = 256

# --- two-player games (`train-env` on an [env] kind "pettingzoo": the self-play league) -

# Who the learner plays (`--opponent-mode`): random, self_play (its latest snapshot),
# pool (a league of snapshots), bot:<spec>.
GAME_OPPONENT_MODE: Final = "self_play"
# Timesteps between snapshots of the learner into the pool; the pool's size (the oldest
# leave); how the pool's opponents are drawn and PFSP's weighting f(p) of the learner's
# win rate p (AlphaStar's "hard": (1 - p)^2).
GAME_SNAPSHOT_EVERY_TIMESTEPS: Final = 10_000
GAME_POOL_SIZE: Final = 8
GAME_SAMPLING: Final = "pfsp"
GAME_PFSP_WEIGHTING: Final = "hard"
# The chance an episode's opponent is one of the `--league-bot`s (when there are any).
GAME_LEAGUE_BOT_SHARE: Final = 0.2
# Moves (both seats) after which a game is truncated (a draw in the league's table).
GAME_MOVE_CAP: Final = 10_000
# `--clone-teacher` (train/game_clone.py): positions labelled (40,000 of search:2's on
# connect four: about a minute), epochs of cross-entropy, the teacher's games' chance of
# a random legal move drawn per game from [0, noise) (positions it would never reach),
# Adam's rate and minibatch, the share held out for the report. On connect four two 3x3
# convolutions learned 0.85 of search:2's critical moves so, an MLP 0.58 (BENCHMARKS.md).
GAME_CLONE_POSITIONS: Final = 40_000
GAME_CLONE_EPOCHS: Final = 15
GAME_CLONE_NOISE: Final = 0.6
GAME_CLONE_LEARNING_RATE: Final = 1e-3
GAME_CLONE_BATCH: Final = 256
GAME_CLONE_HELD_OUT: Final = 0.1
GAME_CLONE_MAX_BYTES: Final = 2 * 1024**3  # the labelled positions, held in memory
# Seconds between the labelling's progress lines (about a minute of it on connect four).
GAME_CLONE_REPORT_SECONDS: Final = 10.0

# --- the regression gate (stages.toml's eval_episodes, regression_margin, [gate]) ------

# The gate's rule: the fixed-episode margin test (docs/GATES.md).
GATE_RULE: Final = "margin"
# Episodes the margin rule plays (an even number: seat-swapped pairs); also what an
# ungated `evaluate` plays.
EVAL_EPISODES: Final = 100
# The margin rule fails iff the reference's win rate exceeds the candidate's by this.
REGRESSION_MARGIN: Final = 0.15
# SPRT: the win-rate gap of the regression it must tell from equal strength.
SPRT_GAP: Final = 0.25
# SPRT: rate of passing a regression of SPRT_GAP.
SPRT_ALPHA: Final = 0.05
# SPRT: rate of failing an equal candidate.
SPRT_BETA: Final = 0.05
# What a stage's candidate plays head to head: its reference only ("previous"), or also
# every earlier stage's passing bot ("all": the gate against forgetting, docs/GATES.md).
GATE_AGAINST: Final = "previous"
# SPRT: episodes played at most before it decides on the sign of the LLR.
SPRT_MAX_EPISODES: Final = 400
# Seat-swapped pairs the evaluator plays per vectorised batch.
SPRT_BATCH_PAIRS: Final = 5
# When SPRT looks: after every pair ("pair") or only after whole batches ("batch").
SPRT_CHECK: Final = "pair"
# Threshold rule: what the target is on, "success" (the fraction of episodes that succeed)
# or "return" (mean return per episode).
THRESHOLD_MEASURE: Final = "success"
# Threshold rule on success: the half-width of the indifference band around the target
# (H0 p = target - delta, H1 p = target + delta). 0.05 keeps a 0.9 target's mean cost
# near 40-70 episodes, well under SPRT_MAX_EPISODES; the cost grows as 1/delta².
THRESHOLD_DELTA: Final = 0.05
# Threshold rule on return: episodes before its interval may decide.
THRESHOLD_MIN_EPISODES: Final = 10

# --- the game (GameSettings: what a bot file records under `game`) ----------------------

# Physics ticks per decision (action repeat): the game's decision_ticks, the trainer's
# --speedup and stages.toml's [defaults] speedup; the scripted bots decide at this rate.
DECISION_TICKS: Final = 16
# 3-D play: vertical motion, and pitch and roll (the game's and the trainer's default).
ALLOW_VERTICAL: Final = True
ALLOW_PITCH_ROLL: Final = True
# Reward subtracted from the learner at a draw (also the trainer's without --draw-penalty).
DRAW_PENALTY: Final = 0.0
# The game's shaping weights: none (goals only). Bots made without the trainer (scripted,
# baselines) and files older than a field record these, so they stay neutral; training
# uses TRAINER_ATTACK_GOAL_BIAS and TRAINER_ORB_APPROACH_BIAS instead.
GAME_ATTACK_GOAL_BIAS: Final = 0.0
GAME_ORB_APPROACH_BIAS: Final = 0.0

# --- the trainer (`cosmic-curriculum train`; why these values: train/settings.py) -------

# Games the trainer plays side by side in its one vectorized env: `train --n-parallel`
# and stages.toml's [defaults] n_parallel, which `run` passes on as --n-parallel.
N_PARALLEL: Final = 256
# Timesteps `train` trains without --timesteps (a quick run; stages use STAGE_TIMESTEPS).
TRAIN_TIMESTEPS: Final = 1_000_000
# Shaping weights training uses unless a stage's flags set them (they are recorded in the
# trained bot's file): a dense signal for stages without the flag.
TRAINER_ATTACK_GOAL_BIAS: Final = 0.5
TRAINER_ORB_APPROACH_BIAS: Final = 0.5
# Whom the learner plays (--opponent-mode).
TRAINER_OPPONENT_MODE: Final = "self_play"
# torch's device ("auto": CUDA when available) and CPU threads (1: robust on shared cores).
TRAINER_DEVICE: Final = "auto"
TORCH_THREADS: Final = 1
# numpy's BLAS threads (bots, searches, evaluations): a second thread makes a bot's move
# about 1.3x faster on an idle machine, but 3-6x slower beside another busy process (a
# training, a second run), and once 40x (docs/BENCHMARKS.md, "BLAS threads"); runs share
# their cores. An OPENBLAS_NUM_THREADS or MKL_NUM_THREADS already set is kept.
BLAS_THREADS: Final = 1
# PPO: entropy bonus, learning rate, env steps per update (over all games), minibatch
# size, epochs per update, discount per decision, action std of a fresh policy.
ENT_COEF: Final = 0.0
LEARNING_RATE: Final = 5e-4
ROLLOUT_SIZE: Final = 8192
BATCH_SIZE: Final = 2048
N_EPOCHS: Final = 8
GAMMA: Final = 0.99
INIT_STD: Final = 0.5
# Timesteps between periodic step_<n>.zip checkpoints, and how many of them are kept.
CHECKPOINT_EVERY_TIMESTEPS: Final = 250_000
KEEP_CHECKPOINTS: Final = 3
# Self-play: timesteps between snapshots, snapshots kept as opponents, timesteps between
# opponent swaps, chance a swap picks the latest snapshot, share of swaps to the rookie.
SELFPLAY_SNAPSHOT_EVERY_TIMESTEPS: Final = 50_000
SELFPLAY_WINDOW: Final = 10
SELFPLAY_SWAP_EVERY_TIMESTEPS: Final = 10_000
SELFPLAY_PLAY_LATEST: Final = 0.5
SELFPLAY_ROOKIE_SHARE: Final = 0.5

# --- `gate simulate` (the gate's error rates by Monte Carlo) ---------------------------

# The rules simulated when no --rule is given.
SIMULATE_RULES: Final = ("margin", "sprt")
# Monte Carlo trials per (rule, draw rate, true strength) cell.
SIMULATE_TRIALS: Final = 20_000
# At most this many: a cell holds its trials' counts at once (a few int64 per trial), a
# million keeps that near 100 MB and a rate's Monte Carlo error under 0.1%.
SIMULATE_MAX_TRIALS: Final = 1_000_000
# Draw rates simulated, comma-separated (as the option takes them).
SIMULATE_DRAW_RATES: Final = "0,0.2,0.4"
# SPRT's outcome model: "pentanomial" (pair scores) or "trinomial" (single games).
SIMULATE_MODEL: Final = "pentanomial"
# True win-rate gap of the "worse" candidate (= SPRT_GAP, so its pass rate measures alpha).
SIMULATE_WORSE_GAP: Final = 0.25
# True win-rate advantage of the "better" candidate.
SIMULATE_BETTER_GAP: Final = 0.10
# Threshold rule: the true success probability of the "weak" bot (the 5% bot).
SIMULATE_WEAK_SUCCESS: Final = 0.05
# Threshold rule on return: the per-episode standard deviation of the simulated returns.
SIMULATE_RETURN_SD: Final = 1.0
# --against N: at most this many earlier bots (each one more comparison per trial).
SIMULATE_MAX_AGAINST: Final = 100

# --- waits and timeouts -----------------------------------------------------------------

# Any one git command (COSMIC_CURRICULUM_GIT_TIMEOUT overrides it).
GIT_TIMEOUT_SECONDS: Final = 60.0
# A push after a commit: the curriculum's, and publish's (--push-timeout) after a training.
PUSH_TIMEOUT_SECONDS: Final = 30.0
# A notify_command may run this long before its process group is killed.
NOTIFY_TIMEOUT_SECONDS: Final = 30.0
# A notification whose notifier failed this many times leaves the outbox (a warning says
# so): a note nobody can deliver must not hold back the ones behind it forever.
NOTIFY_MAX_TRIES: Final = 5
# The exit status by which a notifier says "the receiver refused this note; do not send it
# again" (sysexits' EX_DATAERR): it leaves the outbox at once and the next notes are sent.
NOTIFY_REFUSED_EXIT: Final = 65
# What the run keeps of a notifier's output (its last bytes, for the warning).
NOTIFY_OUTPUT_TAIL_BYTES: Final = 64 * 1024
# How long `evaluate` and `ladder` wait for another holder of the workspace (--lock-wait).
LOCK_WAIT_SECONDS: Final = 30.0
# `status --watch`: seconds between redraws (--interval).
WATCH_INTERVAL_SECONDS: Final = 2.0
# Every timeout and wait a user can set (stages.toml, an option, the environment) and its
# range in seconds: (least, most, whether `least` itself is refused). Finite and bounded,
# so that no setting holds a run forever or overflows a clock; `seconds_problem` (at the
# end of this file) checks them all, each failure one line naming the setting, its value
# and this range.
HOUR: Final = 3600.0
TIMEOUT_RANGES: Final[dict[str, tuple[float, float, bool]]] = {
    "notify": (0.0, HOUR, True),  # notify_timeout
    "bot": (0.0, HOUR, True),  # an exec: bot's answer: --bot-timeout, reference timeout
    "attempt": (1.0, 30 * 24 * HOUR, False),  # run --attempt-timeout: a month
    "push": (0.0, HOUR, True),  # publish --push-timeout
    "git": (0.0, HOUR, True),  # COSMIC_CURRICULUM_GIT_TIMEOUT
    "lock_wait": (0.0, 24 * HOUR, False),  # --lock-wait
    "interval": (0.1, HOUR, False),  # status --interval
    "ray": (0.0, HOUR, True),  # [launcher] request_timeout: a longer call is not coming back
    "tracking": (0.0, HOUR, True),  # [tracking] timeout: one delivery to a tracker
}

# --- evaluation -------------------------------------------------------------------------

# Seat-swapped pairs per match of the `ladder` round robin.
LADDER_PAIRS: Final = 20
# Frames of a `replay` GIF at most (a longer game is sampled evenly).
REPLAY_GIF_FRAMES: Final = 60
# Frames of an env bot's `replay` PNG strip (evenly spaced, the last one included).
ENV_REPLAY_STRIP_FRAMES: Final = 8
# Frames per second of an env bot's `replay` GIF.
ENV_REPLAY_FPS: Final = 15
# What `history export` writes without --format.
HISTORY_EXPORT_FORMAT: Final = "csv"

# --- bots -------------------------------------------------------------------------------

# An ONNX bot is first loaded and played (a batch of a few games) in a child process
# bounded to this many seconds (and 2 GiB of address space) before any match.
ONNX_PROBE_SECONDS: Final = 60.0

# An external bot (`exec:` program): seconds it may take for one answer.
BOT_TIMEOUT_SECONDS: Final = 10.0

# --- experiment trackers ([tracking]) ---------------------------------------------------

# [tracking] tensorboard unset: on when the tensorboard package is installed.
TRACKING_TENSORBOARD: Final = None
# Seconds one delivery to a tracker may take before its process group is stopped.
TRACKING_TIMEOUT_SECONDS: Final = 30.0
# [tracking] mlflow = {...}: a file store in the workspace, relative to it.
MLFLOW_TRACKING_URI: Final = "file:./mlruns"
MLFLOW_EXPERIMENT: Final = "cosmic-curriculum"
# [tracking] wandb = {...}
WANDB_PROJECT: Final = "cosmic-curriculum"
WANDB_MODE: Final = "online"
# During a training, MLflow and W&B get its scalars every this many seconds (in the
# background; TensorBoard gets them as SB3 writes them).
TRACKING_LIVE_SECONDS: Final = 120.0


def seconds_range(kind: str) -> str:
    """The range of ``TIMEOUT_RANGES[kind]`` in words: "greater than 0 and at most 3600"."""
    least, most, strict = TIMEOUT_RANGES[kind]
    low = f"greater than {least:g}" if strict else f"at least {least:g}"
    return f"{low} and at most {most:g}"


def seconds_problem(value: float, kind: str, *, quote: bool = True) -> str | None:
    """None when ``value`` seconds are in the range of ``kind``, else what is wrong (with
    the value when ``quote``). The one check of every timeout (a pure function here, by
    the table it reads, so that every layer can use it)."""
    least, most, strict = TIMEOUT_RANGES[kind]
    finite = value == value and abs(value) != float("inf")
    if finite and (value > least if strict else value >= least) and value <= most:
        return None
    got = f" (got {value:g})" if quote else ""
    return f"must be a finite number of seconds {seconds_range(kind)}{got}"


# --- compare (does the curriculum pay?) -------------------------------------------------

# The arms `compare` trains without --arms: the curriculum against its last stage alone.
COMPARE_ARMS: Final = ("curriculum", "last-stage")
# Trainer seeds without --seeds: three, the fewest that can show a difference at all (a
# complete separation of 3 against 3 seeds has a one-sided rank-test p of 1/20).
COMPARE_SEEDS: Final = (0, 1, 2)
# Seeds at most (each is an arm's whole training) and the largest seed a trainer takes.
COMPARE_MAX_SEEDS: Final = 32
COMPARE_MAX_SEED: Final = 2**31 - 1
# Checkpoints measured along each arm's way (about evenly spaced in timesteps).
COMPARE_POINTS: Final = 10
# Episodes on the last stage per checkpoint along the way, and for each final bot.
COMPARE_CHECKPOINT_EPISODES: Final = 40
COMPARE_FINAL_EPISODES: Final = 100
# Seed of the last stage's evaluation episodes (the same for every arm and checkpoint).
COMPARE_EVAL_SEED: Final = 2026
# Where a compare keeps its arms, JSON, plot and report (inside the workspace).
COMPARE_DIR: Final = "compare"
# Each arm's `run` is stopped (its whole process group) after this long: a month, finite.
COMPARE_ARM_TIMEOUT_SECONDS: Final = 30 * 24 * HOUR
# Seconds between compare's progress lines (each arm's stage and timesteps so far).
COMPARE_PROGRESS_SECONDS: Final = 60.0
# A stopped compare gives each arm's `run` this long after SIGTERM (it stops its trainer,
# saving, and records the interrupt) before SIGKILL.
COMPARE_STOP_GRACE_SECONDS: Final = 60.0
# The verdict's significance level: a one-sided exact rank test over the seeds at this p.
COMPARE_ALPHA: Final = 0.05
