"""`fathom llm ...`: the model registry of a workspace from the shell (`models`, `roles`, the same
services and audit as REST and admin), and `fathom llm try`, one tool-calling exchange with a model,
printed with its trace.

`try`: the model gets a `calculate` tool and a question that needs it; it calls the tool, reads the result
and answers. The command prints the reply and the trace tree (spans, model calls per actor, tokens,
cost), so one run shows that a provider, its key and the tracing all work."""

from __future__ import annotations

import ast
import getpass
import json
import operator
import re
import sys

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from fathom.auth import operator_actor
from fathom.errors import ApplicationError
from fathom.llm import complete, registry, services
from fathom.llm.errors import LLMError, LLMNotConfigured
from fathom.llm.offline import OFFLINE_NOTICE, request_digest
from fathom.llm.trial import model_try
from fathom.llm.types import Message, ToolCall, ToolSpec
from fathom.selectors import model_assignments_of
from fathom.services import workspace_default_ensure, workspace_get
from fathom.tracing import span
from fathom.tracing.selectors import trace_get

DEFAULT_PROMPT = "What is 1234 * 5678 + 9? Use the calculate tool, then answer in one sentence."
MAX_TURNS = 5
ACTOR = "cli:llm-try"
CALCULATE = ToolSpec("calculate", "Evaluate an arithmetic expression (numbers, + - * / ** and parentheses).",
                     {"type": "object", "properties": {"expression": {"type": "string"}},
                      "required": ["expression"]})
PROVIDERS_NEEDING_A_MODEL = ("openai", "anthropic", "openai-compatible", "scripted")


def register(subparsers):
    llm = subparsers.add_parser("llm", help="the model layer")
    commands = llm.add_subparsers(dest="llm_command", required=True)
    attempt = commands.add_parser("try", help="run a tool-calling exchange with a model; print the reply and "
                                              "the trace tree")
    attempt.add_argument("--provider", choices=["openai", "anthropic", "openai-compatible", "offline", "scripted"],
                         help="call this provider directly (keys from OPENAI_API_KEY / ANTHROPIC_API_KEY)")
    attempt.add_argument("--model", default="", help="the provider's model name, e.g. gpt-4o-mini")
    attempt.add_argument("--base-url", default="", help="e.g. http://localhost:11434/v1 for Ollama")
    attempt.add_argument("--registry", default="", help="a registry model by name (its stored key is used)")
    attempt.add_argument("--workspace", default="", help="workspace slug (default: the default workspace); "
                                                        "without --provider/--registry its `main` model answers")
    attempt.add_argument("--prompt", default=DEFAULT_PROMPT)
    attempt.set_defaults(handler=_try)
    _register_registry(commands)


def _register_registry(commands) -> None:
    models = commands.add_parser("models", help="a workspace's registry models").add_subparsers(
        dest="models_command", required=True)
    listing = models.add_parser("list", help="its models and those shared with it (keys: last four characters)")
    listing.set_defaults(handler=_models_list)
    add = models.add_parser("add", help="register a model (the key, if any, read from standard input)")
    for name in ("name", "provider", "model"):
        add.add_argument(name)
    add.add_argument("--base-url", default="")
    add.set_defaults(handler=_models_add)
    update = models.add_parser("update", help="change a model; --key reads a new key from standard input")
    update.add_argument("name")
    update.add_argument("--model", dest="model_name")
    update.add_argument("--base-url")
    update.set_defaults(handler=_models_update)
    test = models.add_parser("test", help="call a model once and print the reply and its trace")
    test.add_argument("name")
    test.add_argument("--prompt", default="Say hello in five words.")
    test.set_defaults(handler=_models_test)
    delete = models.add_parser("delete", help="delete a model and its role assignments")
    delete.add_argument("name")
    delete.set_defaults(handler=_models_delete)
    roles = commands.add_parser("roles", help="which model answers each role in a workspace").add_subparsers(
        dest="roles_command", required=True)
    roles.add_parser("list").set_defaults(handler=_roles_list)
    assign = roles.add_parser("assign", help="make a model answer a role")
    assign.add_argument("role")
    assign.add_argument("model")
    assign.set_defaults(handler=_roles_assign)
    unassign = roles.add_parser("unassign")
    unassign.add_argument("role")
    unassign.set_defaults(handler=_roles_unassign)
    for parser in (listing, add, update, test, delete, assign, unassign, roles.choices["list"]):
        parser.add_argument("--workspace", default="", help="workspace slug (default: the default workspace)")
    for parser in (add, update):
        parser.add_argument("--key", action="store_true", help="read the API key from standard input")


def _try(command, options):
    workspace = _workspace(options["workspace"])
    model = _model(options, workspace)
    messages = [Message.system("You are being tested. Use tools when asked."), Message.user(options["prompt"])]
    extra = {"model": model} if model is not None else {}
    reply = ""
    try:
        with span("trace.prompt", workspace=workspace, actor_id=ACTOR, prompt=options["prompt"][:200]) as root:
            for _ in range(MAX_TURNS):
                completion = complete(workspace=workspace, role="main", messages=messages, tools=[CALCULATE],
                                      offline_policy=CalculateThenAnswer(), **extra)
                messages.append(completion.message)
                if not completion.tool_calls:
                    reply = completion.text
                    break
                for call in completion.tool_calls:
                    messages.append(Message.tool(call.id, _run_tool(call), name=call.name))
            else:
                reply = f"(no answer after {MAX_TURNS} turns)"
    except LLMError as exc:
        raise CommandError(f"the model call failed: {exc}") from None
    command.stdout.write(f"reply: {reply}")
    command.stdout.write("")
    for line in render_trace(trace_get(workspace=workspace, trace_id=root.trace_id)):
        command.stdout.write(line)


def render_trace(trace: dict) -> list[str]:
    """A trace (as `trace_get` returns it) as indented lines of text."""
    totals = trace["totals"]
    lines = [f"trace {trace['trace_id']} [{trace['status']}]"]

    def walk(node, depth):
        parts = [f"{'  ' * depth}{node['name']} [{node['status']}]"]
        if node["duration_ms"] is not None:
            parts.append(f"{node['duration_ms']:.1f} ms")
        if node["name"] == "llm.call":
            parts.append(f"{node['provider']}:{node['model']} in={node['input_tokens']} out={node['output_tokens']} "
                         f"${node['cost']:.6f}")
        if node["name"] == "worker.tool":
            parts.append(f"{node['attributes'].get('tool', '')} -> {node['attributes'].get('result', '')}")
        if node["error"]:
            parts.append(node["error"])
        lines.append("  ".join(parts))
        for event in node["events"]:
            lines.append(f"{'  ' * (depth + 1)}· {event['kind']} {json.dumps(event['payload'], default=str)}")
        for child in node["children"]:
            walk(child, depth + 1)

    for root in trace["spans"]:
        walk(root, 1)
    for actor in trace["actors"]:
        lines.append(f"model calls by {actor['actor_id'] or '(no actor)'}: {actor['model_calls']} "
                     f"({actor['failed_model_calls']} failed)")
    lines.append(f"totals: {totals['model_calls']} model call(s), {totals['tool_calls']} tool call(s), "
                 f"{totals['input_tokens']} input / {totals['output_tokens']} output tokens, ${totals['cost']:.6f}")
    return lines


class CalculateThenAnswer:
    """The offline model's policy for this exchange: calculate the expression in the question, then
    answer with the tool's result."""

    def next_step(self, request):
        results = [m.content for m in request.messages if m.role == "tool"]
        if results:
            return f"{OFFLINE_NOTICE} The calculate tool says: {results[-1]}."
        match = EXPRESSION.search(request.last_user_text)
        expression = match.group(0).strip() if match else "0"
        return ToolCall(f"offline-{request_digest(request)[:12]}", "calculate", {"expression": expression})


EXPRESSION = re.compile(r"[\d(][\d\s.+\-*/()]*[+\-*/][\d\s.+\-*/()]*[\d)]")


def calculate(expression: str) -> float | int:
    """Arithmetic only: numbers, + - * / ** and parentheses (no names, no calls)."""
    operators = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
                 ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            if isinstance(node.op, ast.Pow) and abs(value(node.right)) > 100:
                raise ValueError("exponent too large")
            return operators[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in operators:
            return operators[type(node.op)](value(node.operand))
        raise ValueError(f"not arithmetic: {ast.dump(node)[:60]}")

    return value(ast.parse(expression, mode="eval").body)


def _run_tool(call: ToolCall) -> str:
    with span("worker.tool", call_id=call.id, tool=call.name, arguments=call.arguments) as traced:
        if call.name != "calculate":
            result = f"error: unknown tool {call.name!r}"
        else:
            expression = str(call.arguments.get("expression", ""))
            try:
                result = f"{expression} = {calculate(expression)}"
            except (ValueError, SyntaxError, ZeroDivisionError, OverflowError) as exc:
                result = f"error: {exc}"
        traced.set(result=result)
    return result


def _models_list(command, options):
    for row in registry.models_usable_by(workspace=_workspace(options["workspace"])).order_by("name"):
        hint = "shared" if row.workspace_id is None else (row.api_key_hint or "no key")
        command.stdout.write(f"{row.name}\t{row.provider}:{row.model}\t{row.base_url or '-'}\t{hint}")


def _models_add(command, options):
    row = _registry_call(services.model_create, workspace=_workspace(options["workspace"]), name=options["name"],
                         provider=options["provider"], model=options["model"], base_url=options["base_url"],
                         api_key=_key(command, options) or "", actor=_actor())
    command.stdout.write(f"registered {row.name} ({row.provider}:{row.model})")


def _models_update(command, options):
    row = _own(options)
    changes = {k: v for k, v in (("model", options["model_name"]), ("base_url", options["base_url"])) if v is not None}
    if options["key"]:
        changes["api_key"] = _key(command, options)
    row = _registry_call(services.model_update, model=row, actor=_actor(), **changes)
    command.stdout.write(f"updated {row.name}")


def _models_test(command, options):
    workspace = _workspace(options["workspace"])
    row = _registry_call(services.model_get, workspace=workspace, name=options["name"])
    result = model_try(workspace=workspace, model=row, prompt=options["prompt"], actor_id=ACTOR)
    command.stdout.write(f"reply: {result['reply']}" if result["ok"] else f"failed: {result['error']}")
    command.stdout.write("")
    for line in render_trace(result["trace"]):
        command.stdout.write(line)
    if not result["ok"]:
        raise CommandError(f"the model {row.name} failed: {result['error']}")


def _models_delete(command, options):
    row = _own(options)
    _registry_call(services.model_delete, model=row, actor=_actor())
    command.stdout.write(f"deleted {row.name}")


def _roles_list(command, options):
    for assignment in model_assignments_of(workspace=_workspace(options["workspace"])):
        command.stdout.write(f"{assignment.role}\t{assignment.model.name}")


def _roles_assign(command, options):
    workspace = _workspace(options["workspace"])
    row = _registry_call(services.model_get, workspace=workspace, name=options["model"])
    _registry_call(services.model_assign, workspace=workspace, role=options["role"], model=row, actor=_actor())
    command.stdout.write(f"{options['role']} -> {row.name}")


def _roles_unassign(command, options):
    _registry_call(services.model_unassign, workspace=_workspace(options["workspace"]), role=options["role"],
                   actor=_actor())
    command.stdout.write(f"{options['role']} unassigned")


def _own(options):
    workspace = _workspace(options["workspace"])
    row = _registry_call(services.model_get, workspace=workspace, name=options["name"])
    if row.workspace_id != workspace.pk:
        raise CommandError(f"{row.name} is a deployment-wide model shared with {workspace.slug}: change it in admin")
    return row


def _registry_call(service, **kwargs):
    try:
        return service(**kwargs)
    except (ApplicationError, ValidationError) as exc:
        raise CommandError(getattr(exc, "message", None) or "; ".join(exc.messages)) from None


def _key(command, options) -> str | None:
    if not options["key"]:
        return None
    return sys.stdin.readline().strip()


def _actor() -> str:
    return operator_actor(kind="login", name=getpass.getuser())


def _workspace(slug: str):
    if not slug:
        return workspace_default_ensure()
    try:
        return workspace_get(slug=slug)
    except ApplicationError as exc:
        raise CommandError(exc.message) from None


def _model(options, workspace):
    try:
        if options["registry"]:
            model = registry.model_by_name(options["registry"], workspace=workspace)
        elif options["provider"]:
            if options["provider"] in PROVIDERS_NEEDING_A_MODEL and not options["model"]:
                raise CommandError(f"--model is required with --provider {options['provider']}")
            model = registry.from_spec(f"{options['provider']}:{options['model']}")
        else:
            return None
    except LLMNotConfigured as exc:
        raise CommandError(str(exc)) from None
    if options["base_url"]:
        model = registry.with_options(model, base_url=options["base_url"])
    return model
