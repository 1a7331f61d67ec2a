"""The operator's dashboard at `/` (seed 000's `dashboard/` pages): server-rendered pages over every
app, at the top of the dependency graph. It reads through the apps' selectors and acts through their
services (the same approval, override and audit as admin and REST); it holds no model of its own.

Its parts:
- `access`: login, the workspaces of the user's memberships, the current one (kept in the session),
  and the `dashboard_view` decorator every view wears (logged out -> login; another workspace's row
  -> the 404 page).
- `panels`: the two places a feature shows itself. A *side panel* is a box beside the feed (pending
  proposals, conflicts; later pressure, inbox, directives); a *card section* is a part of every fire's
  card (the thinking accordion; later quality). Adding one is a function and a template, registered
  with `@side_panel(...)` or `@card_section(...)` in `dashboard/sections.py`; nothing else changes.
- `feed`: the feed's page (fires and proposals merged, newest first, in a fixed number of queries).
- `filters`: the lists' filters as GET parameters (the feed's kind, status and text; the proposals
  page's; the world model's), parsed by forms; an unknown value is a 400 page.
- `pages`: the list pages of their own: Proposals (`/proposals/`) and Festinger (`/festinger/`).
- `festinger`: how Festinger's loop detector and recollections are told (its panels, the recollection
  card section, the conversation page at `/festinger/conversations/<session>`).
- `stream`: the live feed over SSE (woken by the session event stream's notifications).
- `runs`: the runs page (the workspace's fires, filtered and paginated, and its conductor runs) and a
  conductor run's page with its graph laid out server-side as SVG.
- `views`, `urls`: thin views; templates live in `templates/dashboard/`.
"""
