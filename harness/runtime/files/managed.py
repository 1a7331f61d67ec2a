"""managed:// paths: profile fields seen as files (seed 003's managed files).

    managed://agent/<slug>/AGENTS.md | SOUL.md | IDENTITY.md | memory
    managed://user/<slug>/USER.md | memory | preferences     (preferences: a JSON object)

A write goes through `profile_update`, which keeps the replaced value as a ProfileFieldVersion and
bumps the profile's version; sessions keep their copies until a RefreshProfile trigger."""

import json

from fathom.errors import ApplicationError, NotFoundError
from harness.runtime import profiles
from harness.runtime.files.sandbox import FileError, replace_text
from harness.runtime.models import AgentProfile, UserProfile

SCHEME = "managed://"
AGENT_FILES = {"AGENTS.md": "agents_md", "SOUL.md": "soul_md", "IDENTITY.md": "identity_md", "memory": "memory"}
USER_FILES = {"USER.md": "user_md", "memory": "memory", "preferences": "preferences"}
KINDS = {"agent": (AgentProfile, AGENT_FILES), "user": (UserProfile, USER_FILES)}


def parse(path: str) -> list[str]:
    """The components of a managed:// path (at most kind, slug, file)."""
    if not isinstance(path, str) or not path.startswith(SCHEME):
        raise FileError(f"{path!r} is not a managed:// path")
    if "\x00" in path:
        raise FileError("the path contains a NUL byte")
    parts = [part for part in path[len(SCHEME):].split("/") if part]
    if len(parts) > 3:
        raise FileError(f"{path!r} is too deep: managed://agent|user/<id>/<file>")
    if parts and parts[0] not in KINDS:
        raise FileError(f"{path!r}: managed paths start with agent/ or user/")
    if len(parts) == 3 and parts[2] not in KINDS[parts[0]][1]:
        raise FileError(f"{parts[2]!r} is not a managed file of a {parts[0]} profile; they are: "
                        f"{', '.join(KINDS[parts[0]][1])}")
    return parts


def managed_list(*, workspace, path: str) -> dict:
    parts = parse(path)
    if not parts:
        entries = [{"name": kind, "type": "dir", "size": None} for kind in KINDS]
    elif len(parts) == 1:
        model = KINDS[parts[0]][0]
        slugs = list(model.objects.filter(workspace=workspace).values_list("slug", flat=True))
        if parts[0] == "agent" and profiles.DEFAULT_AGENT_SLUG not in slugs:
            slugs.append(profiles.DEFAULT_AGENT_SLUG)
        entries = [{"name": slug, "type": "dir", "size": None} for slug in sorted(slugs)]
    elif len(parts) == 2:
        profile = _profile(workspace, parts)
        entries = [{"name": name, "type": "file", "size": len(_text(profile, field).encode())}
                   for name, field in KINDS[parts[0]][1].items()]
    else:
        raise FileError(f"{path} is a file: fs_read it")
    return {"path": SCHEME + "/".join(parts), "entries": entries, "truncated": False}


def managed_read(*, workspace, path: str) -> str:
    parts = _file_parts(path)
    return _text(_profile(workspace, parts), KINDS[parts[0]][1][parts[2]])


def managed_write(*, workspace, path: str, content: str, allow_override: bool, replaced_by: str) -> str:
    parts = _file_parts(path)
    profile = _profile(workspace, parts, for_write=True)
    field = KINDS[parts[0]][1][parts[2]]
    if _text(profile, field) and not allow_override:
        raise FileError(f"{path} is not empty; pass allow_override=true to replace it")
    _store(profile, field, content, replaced_by=replaced_by)
    return f"wrote {len(content.encode())} bytes to {path} (profile version {profile.version})"


def managed_replace(*, workspace, path: str, old: str, new: str, mode: str, replaced_by: str) -> str:
    parts = _file_parts(path)
    profile = _profile(workspace, parts, for_write=True)
    field = KINDS[parts[0]][1][parts[2]]
    updated, count = replace_text(_text(profile, field), old, new, mode)
    _store(profile, field, updated, replaced_by=replaced_by)
    return f"replaced {count} match(es) in {path} (profile version {profile.version})"


def _file_parts(path: str) -> list[str]:
    parts = parse(path)
    if len(parts) != 3:
        raise FileError(f"{path} is a folder: name a file, managed://agent|user/<id>/<file>")
    return parts


def _profile(workspace, parts: list[str], *, for_write: bool = False):
    try:
        if parts[0] == "agent":
            getter = profiles.agent_profile_get if for_write else _agent_for_read
            return getter(workspace=workspace, slug=parts[1])
        return profiles.user_profile_get(workspace=workspace, slug=parts[1])
    except NotFoundError as exc:
        raise FileError(exc.message) from None


def _agent_for_read(*, workspace, slug):
    # Reading the default agent must not store it (reads never create); writing does.
    if slug == profiles.DEFAULT_AGENT_SLUG:
        stored = AgentProfile.objects.filter(workspace=workspace, slug=slug).first()
        return stored or AgentProfile(workspace=workspace, slug=slug, **profiles.DEFAULT_AGENT)
    return profiles.agent_profile_get(workspace=workspace, slug=slug)


def _text(profile, field: str) -> str:
    value = getattr(profile, field)
    if field == "preferences":
        return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) if value else ""
    return value or ""


def _store(profile, field: str, content: str, *, replaced_by: str) -> None:
    value = content
    if field == "preferences":
        try:
            value = json.loads(content) if content.strip() else {}
        except ValueError as exc:
            raise FileError(f"preferences must be a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise FileError("preferences must be a JSON object")
    try:
        profiles.profile_update(profile=profile, replaced_by=replaced_by, **{field: value})
    except ApplicationError as exc:
        raise FileError(exc.message) from None
