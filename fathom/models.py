"""The fathom app's tables, gathered for Django: the tenant boundary (`fathom.tenancy`) and the
platform's tables that live with their code (the model registry, trace events, the outbox, the shared
file root's mark)."""

from fathom.file_root import FileRootMark
from fathom.llm.models import LLMModel, ModelAssignment
from fathom.outbox import OutboxMessage
from fathom.tenancy import ROLE_RANK, ApiKey, Membership, Role, Workspace, WorkspaceScoped
from fathom.tracing.models import TraceEvent

__all__ = ["ROLE_RANK", "ApiKey", "FileRootMark", "LLMModel", "Membership", "ModelAssignment", "OutboxMessage",
           "Role", "TraceEvent", "Workspace", "WorkspaceScoped"]
