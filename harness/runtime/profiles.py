"""Agent and user profiles (seed 003): canonical per workspace; sessions keep copies."""

import json

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils.text import slugify

from fathom.errors import ApplicationError, ConflictError, NotFoundError
from harness.runtime.models import AgentProfile, ProfileFieldVersion, UserProfile

DEFAULT_AGENT_SLUG = "fathom"
DEFAULT_AGENT = {
    "name": "Fathom",
    "identity_md": "You are Fathom: an agent with a memory (the lake) you can search and reason over.",
    "agents_md": "Answer from what the lake holds, cite the ids you used, and say plainly what you do not know.",
}
AGENT_FIELDS = ("name", "agents_md", "soul_md", "identity_md", "memory")
USER_FIELDS = ("name", "user_md", "memory", "preferences")


def agent_profile_default(*, workspace) -> AgentProfile:
    """The workspace's default agent profile, created on first use."""
    profile, _ = AgentProfile.objects.get_or_create(workspace=workspace, slug=DEFAULT_AGENT_SLUG,
                                                    defaults=DEFAULT_AGENT)
    return profile


def agent_profile_create(*, workspace, slug: str, **fields) -> AgentProfile:
    return _create(AgentProfile, AGENT_FIELDS, workspace=workspace, slug=slug, fields=fields)


def user_profile_create(*, workspace, slug: str, **fields) -> UserProfile:
    return _create(UserProfile, USER_FIELDS, workspace=workspace, slug=slug, fields=fields)


@transaction.atomic
def profile_update(*, profile, replaced_by: str = "api", **fields):
    """Change a profile and bump its version, keeping each replaced field value as a
    ProfileFieldVersion (its history). Sessions keep their copies until they are sent a
    RefreshProfile trigger."""
    allowed = AGENT_FIELDS if isinstance(profile, AgentProfile) else USER_FIELDS
    unknown = set(fields) - set(allowed)
    if unknown:
        raise ApplicationError(f"unknown profile fields: {', '.join(sorted(unknown))}")
    if profile.pk is None:
        profile.save()
    # Under the row's lock, so two writers each keep the value the other replaced.
    current = type(profile).objects.select_for_update().get(pk=profile.pk)
    owner = {"agent_profile" if isinstance(profile, AgentProfile) else "user_profile": current}
    ProfileFieldVersion.objects.bulk_create([
        ProfileFieldVersion(workspace_id=current.workspace_id, field=name, version=current.version,
                            content=_as_text(getattr(current, name)), replaced_by=replaced_by[:200], **owner)
        for name, value in fields.items() if name != "name" and getattr(current, name) != value
    ])
    for name, value in fields.items():
        setattr(profile, name, value)
    profile.version = F("version") + 1
    profile.save(update_fields=[*fields, "version", "updated_at"])
    profile.refresh_from_db(fields=["version"])
    return profile


def _as_text(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, dict) else (value or "")


def agent_profile_get(*, workspace, slug: str) -> AgentProfile:
    if slug == DEFAULT_AGENT_SLUG:
        return agent_profile_default(workspace=workspace)
    return _get(AgentProfile, workspace=workspace, slug=slug)


def user_profile_get(*, workspace, slug: str) -> UserProfile:
    return _get(UserProfile, workspace=workspace, slug=slug)


def profile_copy(profile) -> dict:
    """The frozen copy a session keeps (what its turns see, whatever happens to the profile)."""
    if profile is None:
        return {}
    fields = AGENT_FIELDS if isinstance(profile, AgentProfile) else USER_FIELDS
    return {"slug": profile.slug, "version": profile.version, **{name: getattr(profile, name) for name in fields}}


def _create(model, allowed, *, workspace, slug, fields):
    if not slug or slugify(slug) != slug:
        raise ApplicationError(f"{slug!r} is not a valid slug (lowercase letters, digits, hyphens)")
    unknown = set(fields) - set(allowed)
    if unknown:
        raise ApplicationError(f"unknown profile fields: {', '.join(sorted(unknown))}")
    try:
        with transaction.atomic():
            return model.objects.create(workspace=workspace, slug=slug, **fields)
    except IntegrityError:
        raise ConflictError(f"a {model._meta.verbose_name} {slug!r} exists already") from None


def _get(model, *, workspace, slug):
    found = model.objects.filter(workspace=workspace, slug=slug).first()
    if found is None:
        raise NotFoundError(f"no {model._meta.verbose_name} {slug!r} in this workspace")
    return found
