"""Changes to the model registry. Every change tells all processes to re-resolve roles."""

from __future__ import annotations

from django.db import transaction

from fathom.errors import ApplicationError, NotFoundError
from fathom.llm.models import ANY_ROLE, LLMModel, ModelAssignment, Provider, role_validator
from fathom.llm.registry import registry_changed

_UNSET = object()


@transaction.atomic
def model_create(*, name: str, provider: str, model: str, base_url: str = "", api_key: str = "",
                 **fields) -> LLMModel:
    """Register a model; `api_key` is encrypted before it is stored (blank: the provider's env key)."""
    if provider not in Provider.values:
        raise ApplicationError(f"provider must be one of {', '.join(Provider.values)}, got {provider!r}")
    row = LLMModel(name=name, provider=provider, model=model, base_url=base_url, **fields)
    row.set_api_key(api_key)
    row.full_clean()
    row.save()
    registry_changed()
    return row


@transaction.atomic
def model_update(*, model: LLMModel, api_key=_UNSET, **fields) -> LLMModel:
    """Change a model's fields; pass `api_key` to replace the key ("" removes it)."""
    for name, value in fields.items():
        setattr(model, name, value)
    if api_key is not _UNSET:
        model.set_api_key(api_key)
    model.full_clean()
    model.save()
    registry_changed()
    return model


@transaction.atomic
def model_assign(*, workspace, role: str, model: LLMModel) -> ModelAssignment:
    """Make `model` answer `role` in `workspace` (None: the deployment default). Replaces the
    previous assignment of that role there."""
    role_validator(role)
    assignment, _ = ModelAssignment.objects.update_or_create(
        workspace=workspace, role=role, defaults={"model": model})
    registry_changed()
    return assignment


@transaction.atomic
def model_unassign(*, workspace, role: str) -> None:
    ModelAssignment.objects.filter(workspace=workspace, role=role).delete()
    registry_changed()


def model_get(*, name: str) -> LLMModel:
    row = LLMModel.objects.filter(name=name).first()
    if row is None:
        raise NotFoundError(f"no LLM model named {name!r}")
    return row


__all__ = ["ANY_ROLE", "model_assign", "model_create", "model_get", "model_unassign", "model_update"]
