"""The quality harness's configuration of a workspace: its QualitySettings and retry policy (rows made
with the defaults on first use, edited in admin), and which fires it wraps."""

from django.conf import settings

from fathom.sql import ids_next_sql
from harness.fires.models import Fire
from harness.quality.models import QualityRetryPolicy, QualityRun, QualitySettings
from harness.quality.prompts import prompt_or_default, prompt_override_sql
from harness.quality.retry import DEFAULT_RETRY_SETTINGS, RetryPolicy, RetrySettings


def quality_settings_get(*, workspace_id, prompt: str = "", ids_for=(), retry_policy: bool = False) -> QualitySettings:
    """The workspace's quality settings (a row is created on first use, enabled as
    FATHOM_QUALITY_DEFAULT_ENABLED says). `prompt`: the id of a prompt read along with them, given as
    their `.prompt` (what prompt_get would give). `ids_for`: models whose next primary keys are taken
    along with them when the harness is enabled, given as their `.new_ids` (one each; None when it is
    not): the keys of the rows a wrapped fire inserts with its events. `retry_policy`: the workspace's
    retry policy read along with them, given as their `.retry_policy` (what retry_policy_get gives)."""
    columns, params = ["*"], []
    if retry_policy:
        policies = QualityRetryPolicy._meta.db_table
        columns.append(f"(SELECT json_object_agg(p.workflow_type, json_build_array(p.max_attempts, "
                       f"p.good_enough_score, p.low_quality_threshold)) FROM {policies} p "
                       f"WHERE p.workspace_id = {QualitySettings._meta.db_table}.workspace_id) AS retry_policies")
    if prompt:
        columns.append(f"{prompt_override_sql()} AS prompt_override")
        params.append(prompt)
    if ids_for:
        sql, ids_params = ids_next_sql(*ids_for)
        columns.append(f"CASE WHEN enabled THEN {sql} END AS new_ids")
        params += ids_params
    # read raw: the ORM's building of the query cost more than the query (on every wrapped fire's way in)
    sql = f"SELECT {', '.join(columns)} FROM {QualitySettings._meta.db_table} WHERE workspace_id = %s"
    found = next(iter(QualitySettings.objects.raw(sql, [*params, workspace_id])), None)
    if found is None:
        QualitySettings.objects.get_or_create(workspace_id=workspace_id,
                                              defaults={"enabled": settings.FATHOM_QUALITY_DEFAULT_ENABLED})
        found = next(iter(QualitySettings.objects.raw(sql, [*params, workspace_id])))
    if prompt:
        found.prompt = prompt_or_default(prompt, found.prompt_override)
    if retry_policy:
        found.retry_policy = (RetryPolicy(settings={workflow: RetrySettings(*values)
                                                    for workflow, values in found.retry_policies.items()})
                              if found.retry_policies else retry_policy_get(workspace_id=workspace_id))
    return found


def retry_policy_get(*, workspace_id) -> RetryPolicy:
    """The workspace's retry policy: its rows (created with the seed's defaults on first use), edited in
    admin."""
    rows = {row.workflow_type: row for row in QualityRetryPolicy.objects.filter(workspace_id=workspace_id)}
    missing = [QualityRetryPolicy(workspace_id=workspace_id, workflow_type=str(workflow),
                                  max_attempts=values.max_attempts, good_enough_score=values.good_enough_score,
                                  low_quality_threshold=values.low_quality_threshold)
               for workflow, values in DEFAULT_RETRY_SETTINGS.items()
               if str(workflow) in dict(QualityRetryPolicy._meta.get_field("workflow_type").choices)
               and str(workflow) not in rows]
    if missing:
        QualityRetryPolicy.objects.bulk_create(missing, ignore_conflicts=True)
        rows.update({row.workflow_type: row for row in missing})
    return RetryPolicy(settings={name: RetrySettings(row.max_attempts, row.good_enough_score,
                                                     row.low_quality_threshold) for name, row in rows.items()})


def retry_policy_of(run: QualityRun) -> RetryPolicy:
    """The retry policy a run is held to: its workflow's as the run was classified (a run made before
    runs kept theirs: the workspace's now)."""
    kept = run.complexity.get("retry_policy")
    if kept is None:
        return retry_policy_get(workspace_id=run.workspace_id)
    return RetryPolicy(settings={run.complexity.get("workflow_type", "chat"): RetrySettings(**kept)})


def quality_settings_summary(row: QualitySettings) -> dict:
    """The workspace's settings as REST and `fathom quality show` give them: switches, the swarm, and
    the retry and contract thresholds per workflow."""
    policies = retry_policy_get(workspace_id=row.workspace_id).settings
    return {"enabled": row.enabled, "swarm_enabled": row.swarm_enabled, "swarm_min_sources": row.swarm_min_sources,
            "swarm_specialists": list(row.swarm_specialists), "specialists": row.specialists,
            "retry_policies": {workflow: {"max_attempts": p.max_attempts, "good_enough_score": p.good_enough_score,
                                          "low_quality_threshold": p.low_quality_threshold}
                               for workflow, p in sorted(policies.items())},
            "contracts": row.contracts}


def applies(fire: Fire, quality: QualitySettings) -> bool:
    """Whether the harness wraps the fire: a session's top-level fire, in a workspace that enabled it."""
    return fire.depth == 0 and bool(fire.session_id) and quality.enabled
