"""engage_feed(kind, target_ids, reason): record the operator's preference about feed content as
engagement:more / engagement:less deltas, one per target (or one about the reason alone)."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.selectors import deltas_resolve
from lake.services import deltas_create


def run(ctx: ToolContext, args: dict):
    kind = args["kind"].removeprefix("engagement:")
    reason = (args.get("reason") or "").strip()
    try:
        targets = deltas_resolve(workspace=ctx.workspace, ids_or_prefixes=list(dict.fromkeys(args.get("target_ids")
                                                                                          or [])))
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    if not targets and not reason:
        raise ToolError("say what the preference is about: target_ids, or a reason naming the content")
    fire = ctx.fire
    common = ["kind:engagement", f"engagement:{kind}", f"fire:{fire.pk}"] + ([fire.session.tag] if fire.session_id else [])
    items = [{"content": reason or f"engagement:{kind} for {t.id}: {t.title}", "source": "harness",
              "tags": [*common, f"target:{t.id}"]} for t in targets]
    items = items or [{"content": reason, "source": "harness", "tags": common}]
    written = deltas_create(workspace=ctx.workspace, items=items, idempotency_key=f"engage-feed:{ctx.idempotency_key}")
    return {"recorded": f"engagement:{kind}", "delta_ids": [d.id for d in written.deltas],
            "target_ids": [t.id for t in targets]}


TOOL = register(Tool(
    name="engage_feed",
    description="Record a preference the user expressed about feed content: engagement:more or engagement:less "
                "against feed cards or their constituents (target_ids), with the reason in their words. Use it "
                "whenever such a preference is voiced; do not only acknowledge it in prose.",
    run=run,
    parameters={"type": "object", "required": ["kind"], "additionalProperties": False, "properties": {
        "kind": {"type": "string", "enum": ["more", "less", "engagement:more", "engagement:less"]},
        "target_ids": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
        "reason": {"type": "string"},
    }},
))
