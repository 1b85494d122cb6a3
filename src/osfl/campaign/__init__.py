"""A campaign for a short GPU slot (issue 41): a prioritised queue of DVC stages run to a deadline on the lent
machine, what finished packed into one archive, and that archive landed in the user's checkout as dvc.lock entries.

``python -m osfl.campaign`` (see ``--help``):

* ``plan QUEUE --minutes M [--pack N]``: which steps of the queue are done, which run when (``run``'s schedule, N at
  a time, each taking its estimate), which do not fit and which are skipped for an upstream step that does not run;
* ``run QUEUE --minutes M --out DIR`` (on the lent machine, in its copy of the repository): runs the steps that are
  not done in the queue's order, at most ``--pack`` at a time (several small stages share one GPU), a step only once
  the queue's steps whose outputs it reads have finished (skipped if one did not), each stage's own
  ``cmd`` in its ``wdir`` (frozen stages too: paper-profile stages are frozen so that ``dvc repro`` never repeats
  GPU-hours by accident), stops what runs at the deadline, ``dvc commit``s each finished stage there and packs its
  outputs with its lock entry into ``DIR/campaign.tar.gz`` (outputs cached by DVC only up to ``--max-mib``: the rest
  stay behind and are named);
* ``queue PROJECT -o FILE [--stage GLOB] [--scale F]``: writes a queue of the project's stages whose lock entry is not
  current or missing (a re-record, or grid items never run), upstream first, each estimated from its committed
  runtime record or its recorded siblings' (the estimate's source in a comment);
* ``land ARCHIVE`` (back home): unpacks each finished stage's outputs and records it with ``dvc commit``, then checks
  that every dependency hashes here as it did on the lent machine (the same bytes travelled); a stage whose
  dependencies differ, or whose cached outputs stayed behind, is not landed, and the report says why.

A later lending resumes: a step whose lock entry matches its dependencies and command is done and skipped, so a
queue run in several slots runs each stage once. A step with ``rerun: true`` is done only when its outputs are here
as well: the way to remake cached outputs that a committed run kept nowhere. A stage stopped at the deadline starts
again in the next slot (stages do not checkpoint inside; a step's ``minutes`` is its estimate, and a step that would
not fit in what is left is not started). A round stage whose persistent checkpoint is the one dvc.lock records (as
``dvc checkout`` restores it) would resume at its recorded end and redo nothing: ``run`` refuses the queue before
anything starts and names the checkpoint to delete; a killed run's partial checkpoint still resumes. A step that
reads a path which is not here and which no queued step writes (a current upstream stage never checked out) is
refused the same way, naming the stage that makes it.

One module per job: :mod:`.steps` (the queue file, a step, an outcome), :mod:`.projects` (the DVC projects, lock
entries, ``dvc`` retried while another process holds a project's lock), :mod:`.estimates` (``queue``: a re-record's
stale stages with their estimates), :mod:`.schedule` (``plan`` and the next-step rule), :mod:`.runner` (``run``) and
:mod:`.landing` (``land``).
"""
from __future__ import annotations

import subprocess  # noqa: F401  (tests patch campaign.subprocess.run and campaign.time.sleep: the modules' own)
import time  # noqa: F401

from .estimates import _recorded_seconds, _siblings_seconds, stale_queue
from .landing import land
from .projects import LOCK_BUSY, LOCK_WAIT_S, _dvc, _load_project, _lock_entry, _project_lock, _Projects, is_done
from .runner import run
from .schedule import _next_step, _upstream, plan
from .steps import ARCHIVE, MANIFEST, STEP_KEYS, Outcome, Step, load_queue, write_queue

__all__ = ["ARCHIVE", "LOCK_BUSY", "LOCK_WAIT_S", "MANIFEST", "STEP_KEYS", "Outcome", "Step", "is_done", "land",
           "load_queue", "plan", "run", "stale_queue", "write_queue"]
