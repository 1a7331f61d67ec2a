"""deliberate(question): several voices on a question, as parallel model calls, returned side by
side. Expensive: for questions where perspectives genuinely differ."""

import contextvars
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections, connection

from fathom.llm import LLMError, Message, complete
from harness.fires.tools.base import Tool, ToolContext, ToolError, register

VOICES = {
    "skeptic": "You are the skeptic. Find what is weak, unsupported or missing in the obvious answer.",
    "advocate": "You are the advocate. Make the strongest case for the most plausible answer.",
    "synthesist": "You are the synthesist. Connect the threads and name what the others would miss.",
}


def run(ctx: ToolContext, args: dict):
    voices = args.get("voices") or list(VOICES)
    unknown = [v for v in voices if v not in VOICES]
    if unknown:
        raise ToolError(f"unknown voices {unknown}; choose from {', '.join(VOICES)}")
    question, context = args["question"], args.get("context", "")
    with ThreadPoolExecutor(max_workers=len(voices)) as pool:
        futures = {v: pool.submit(contextvars.copy_context().run, _voice, ctx.workspace, v, question, context)
                   for v in voices}
        answers = {v: f.result() for v, f in futures.items()}
    return "\n\n".join(f"## {voice}\n{text}" for voice, text in answers.items())


def _voice(workspace, voice: str, question: str, context: str) -> str:
    try:
        prompt = f"{question}\n\nContext:\n{context}" if context else question
        # The voices read a brief the fire composed (its question and the lake's context): Fathom
        # talking to itself, no conversation for Festinger to learn from.
        return complete(workspace=workspace, role="main", messages=[Message.system(VOICES[voice]),
                                                                     Message.user(prompt)], conversation=False).text
    except LLMError as exc:
        return f"(this voice failed: {exc})"
    finally:
        # A pool thread's connection would outlive the pool otherwise.
        close_old_connections()
        connection.close()


TOOL = register(Tool(
    name="deliberate",
    description="Hear several voices (skeptic, advocate, synthesist) on a question at once. Expensive; use it "
                "when perspectives genuinely differ.",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["question"], "additionalProperties": False, "properties": {
        "question": {"type": "string", "minLength": 1},
        "context": {"type": "string", "description": "what the voices should know"},
        "voices": {"type": "array", "items": {"type": "string", "enum": list(VOICES)}, "minItems": 1},
    }},
))
