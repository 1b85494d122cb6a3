"""Run a DVC pipeline's stale stages on a Ray cluster, with DVC's remote and run-cache as the data plane.

``python -m osfl.farm <dvc.yaml> [stage selectors]`` (``make farm PIPELINE=... STAGES=...``):

* :mod:`.plan`: the stage graph and the stale stages as DVC sees them; where each runs (a Ray worker, or the
  user's checkout for a stage with no output), how its results come back (the run-cache, or carried: a persistent
  output) and what it asks of a node (``farm.resources`` in the pipeline's params, per stage family);
* :mod:`.worker`: one task: a checkout of the commit per worker process, the carried stages upstream landed,
  ``dvc repro --pull <stage>``, then :mod:`.runcache` pushes its outputs and its run-cache entry with every object
  it names (git-tracked records included), or :mod:`.carry` sends a carried stage's outputs and lock entry;
* :mod:`.launcher`: the tasks in dependency order with bounded retries and a live line per stage, then
  the carried stages landed and ``dvc repro --pull`` in the user's checkout, which restores every finished stage
  from the run-cache; DVC writes dvc.lock itself (``dvc commit`` for a landed stage).

What must be shared: the git commit (workers clone ``--git-url``, by default the local repository) and the DVC
remote (the project's default remote or ``--remote-url``). What must not: the DVC caches and the checkouts.
"""
from .launcher import FarmResult, run_farm
from .plan import DEFAULT_RESOURCES, Plan, Resources, StagePlan, make_plan, stage_resources

__all__ = ["DEFAULT_RESOURCES", "FarmResult", "Plan", "Resources", "StagePlan", "make_plan", "run_farm",
           "stage_resources"]
