"""Reading what the trackers stored, with their own libraries (for tests)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

BLOCK = 32768  # the .wandb file's log blocks (LevelDB's log format after a 7-byte header)


def wandb_records(run_file: Path) -> list[Any]:
    """The protobuf Records of an offline W&B run file (``run-<id>.wandb``)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = run_file.read_bytes()
    assert data[:4] == b":W&B"
    pos, pending, chunks = 7, b"", []
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:  # full
            chunks.append(chunk)
        elif kind == 2:  # first
            pending = chunk
        elif kind == 3:  # middle
            pending += chunk
        elif kind == 4:  # last
            chunks.append(pending + chunk)
    records = []
    for chunk in chunks:
        record = pb.Record()
        record.ParseFromString(chunk)
        records.append(record)
    return records


def wandb_runs(directory: Path) -> dict[str, dict[str, Any]]:
    """Per W&B run id: its name, group, job type, history rows and summary, merged over
    every offline run directory of that id (a resumed run writes another one)."""
    out: dict[str, dict[str, Any]] = {}
    for run_file in sorted(directory.glob("wandb/offline-run-*/run-*.wandb")):
        for r in wandb_records(run_file):
            kind = r.WhichOneof("record_type")
            if kind == "run":
                run = out.setdefault(r.run.run_id, {"history": [], "summary": {}, "dirs": set()})
                run.update(name=r.run.display_name, group=r.run.run_group, job=r.run.job_type)
                run["dirs"].add(run_file.parent.name)
                current = run
            elif kind == "history":
                current["history"].append(
                    {i.key or "/".join(i.nested_key): i.value_json for i in r.history.item}
                )
            elif kind == "summary":
                for i in r.summary.update:
                    current["summary"][i.key or "/".join(i.nested_key)] = i.value_json
            elif kind == "files":
                current.setdefault("files", []).extend(f.path for f in r.files.files)
    return out


def tensorboard_scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(directory))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
