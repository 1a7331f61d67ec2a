"""Changes to the model registry. Every change tells all processes to re-resolve roles.

A model belongs to one workspace (`workspace`), or, made by a superuser, to the deployment
(`workspace=None`), reaching only the workspaces it is shared with. A workspace's model points only at
a base URL the deployment allows (FATHOM_MODEL_BASE_URLS, FATHOM_MODEL_ALLOW_LOOPBACK) and never uses
the deployment's key; a role is assigned only a model its workspace may use.

A change made by someone (`actor`: `fathom.auth.operator_actor`'s spelling) in a workspace leaves its
audit record there, whether it came from REST, admin or the CLI: a `llm.registry.<change>` trace
naming the model, the role and the actor (`registry_change_record`)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from fathom.errors import ApplicationError, NotFoundError
from fathom.llm.models import ANY_ROLE, LLMModel, ModelAssignment, Provider, role_validator
from fathom.llm.registry import models_usable_by, registry_changed
from fathom.tracing import span

_UNSET = object()
_SLUG = re.compile(r"[-a-zA-Z0-9_]{1,100}")


@transaction.atomic
def model_create(*, workspace, name: str, provider: str, model: str, base_url: str = "", api_key: str = "",
                 uses_deployment_key: bool = False, actor: str = "", **fields) -> LLMModel:
    """Register a model in `workspace` (None: deployment-wide, a superuser's act). `api_key` is
    encrypted before it is stored; blank is no key (a deployment-wide model may instead use the
    environment's, `uses_deployment_key`). A workspace's base URL must be allowed
    (`base_url_check`). The name is unique in its workspace."""
    if provider not in Provider.values:
        raise ApplicationError(f"provider must be one of {', '.join(Provider.values)}, got {provider!r}")
    row = LLMModel(workspace=workspace, name=name, provider=provider, model=model, base_url=base_url,
                   uses_deployment_key=uses_deployment_key, **fields)
    row.set_api_key(api_key)
    _check(row)
    row.save()
    registry_changed()
    registry_change_record("created", workspace=row.workspace_id, actor=actor, model=row.name, provider=provider,
           base_url=row.base_url)
    return row


@transaction.atomic
def model_update(*, model: LLMModel, api_key=_UNSET, actor: str = "", **fields) -> LLMModel:
    """Change a model's fields; pass `api_key` to replace the key ("" removes it). The same rules as
    `model_create` hold afterwards."""
    for name, value in fields.items():
        setattr(model, name, value)
    if api_key is not _UNSET:
        model.set_api_key(api_key)
    _check(model)
    model.save()
    registry_changed()
    registry_change_record("updated", workspace=model.workspace_id, actor=actor, model=model.name, fields=sorted(fields),
           key_changed=api_key is not _UNSET)
    return model


@transaction.atomic
def model_delete(*, model: LLMModel, actor: str = "") -> None:
    """Remove a model and the role assignments that named it (those roles fall back to the next
    match of the registry's lookup order)."""
    workspace_id, name = model.workspace_id, model.name
    ModelAssignment.objects.filter(model=model).delete()
    model.delete()
    registry_changed()
    registry_change_record("deleted", workspace=workspace_id, actor=actor, model=name)


@transaction.atomic
def model_share(*, model: LLMModel, workspaces) -> LLMModel:
    """Share a deployment-wide model with exactly `workspaces` (a superuser's act). A workspace it is
    no longer shared with loses its assignments to it."""
    if model.workspace_id is not None:
        raise ApplicationError("only a deployment-wide model is shared; this one belongs to a workspace")
    model.shared_with.set(workspaces)
    ModelAssignment.objects.filter(model=model, workspace__isnull=False).exclude(
        workspace__in=model.shared_with.all()).delete()
    registry_changed()
    return model


@transaction.atomic
def model_assign(*, workspace, role: str, model: LLMModel, actor: str = "") -> ModelAssignment:
    """Make `model` answer `role` in `workspace` (None: the deployment default, which only a
    deployment-wide model may be). Replaces the previous assignment of that role there. A model the
    workspace may not use is no model of that name to it (404)."""
    role_validator(role)
    if workspace is None:
        if model.workspace_id is not None:
            raise ApplicationError("a deployment default must be a deployment-wide model")
    elif not models_usable_by(workspace=workspace).filter(pk=model.pk).exists():
        raise NotFoundError(f"no LLM model named {model.name!r}")
    assignment, _ = ModelAssignment.objects.update_or_create(
        workspace=workspace, role=role, defaults={"model": model})
    registry_changed()
    registry_change_record("assigned", workspace=workspace, actor=actor, model=model.name, role=role)
    return assignment


@transaction.atomic
def model_unassign(*, workspace, role: str, actor: str = "") -> None:
    """No model of the workspace's own answers `role` any more (the deployment's default does)."""
    ModelAssignment.objects.filter(workspace=workspace, role=role).delete()
    registry_changed()
    registry_change_record("unassigned", workspace=workspace, actor=actor, role=role)


def model_get(*, workspace, name: str) -> LLMModel:
    """A model `workspace` may use, by name: its own before a shared one (NotFoundError otherwise)."""
    if not isinstance(name, str) or not _SLUG.fullmatch(name):
        raise NotFoundError(f"no LLM model named {name!r}")
    row = models_usable_by(workspace=workspace).filter(name=name).order_by("workspace_id").first()
    if row is None:
        raise NotFoundError(f"no LLM model named {name!r}")
    return row


def base_url_check(base_url: str) -> None:
    """Refuse (400, naming the setting) a workspace's base URL outside FATHOM_MODEL_BASE_URLS, and a
    loopback one unless FATHOM_MODEL_ALLOW_LOOPBACK. Blank is the provider's own endpoint."""
    if not base_url:
        return
    if _loopback(base_url):
        if settings.FATHOM_MODEL_ALLOW_LOOPBACK:
            return
        raise ApplicationError("a loopback base URL is not allowed in this deployment (FATHOM_MODEL_ALLOW_LOOPBACK)",
                               details={"base_url": base_url, "setting": "FATHOM_MODEL_ALLOW_LOOPBACK"})
    if not any(base_url.startswith(allowed) or base_url.rstrip("/") == allowed.rstrip("/")
               for allowed in settings.FATHOM_MODEL_BASE_URLS):
        raise ApplicationError(
            f"base URL {base_url!r} is not allowed (FATHOM_MODEL_BASE_URLS: "
            f"{', '.join(settings.FATHOM_MODEL_BASE_URLS) or 'none'})",
            details={"base_url": base_url, "setting": "FATHOM_MODEL_BASE_URLS"})


def _check(row: LLMModel) -> None:
    if row.workspace_id is not None:
        if row.uses_deployment_key:
            raise ApplicationError("a workspace's model never uses the deployment's key")
        base_url_check(row.base_url)
    duplicate = LLMModel.objects.filter(workspace_id=row.workspace_id, name=row.name).exclude(pk=row.pk)
    if duplicate.exists():
        raise ApplicationError(f"a model named {row.name!r} exists already", details={"name": "taken"})
    row.full_clean(validate_constraints=False)


def registry_change_record(change: str, *, workspace, actor: str, **what) -> None:
    """The audit record of a change `actor` made in `workspace` (none without an actor, as the tests'
    and the migrations' own calls are, and none for a deployment-wide change: admin's history has it)."""
    if workspace is None or not actor:
        return
    with span(f"llm.registry.{change}", workspace=workspace, actor_id=actor, **what):
        pass


def _loopback(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").strip("[]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


__all__ = ["ANY_ROLE", "base_url_check", "model_assign", "model_create", "model_delete", "model_get", "model_share",
           "model_unassign", "model_update", "registry_change_record"]
