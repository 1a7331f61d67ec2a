"""Autonomy (seed 000's Phase 2): pressure per workspace, the operator's switch, and the Sits Fathom
starts by itself (a focus pre-pass, then a self-directing Sit in the workspace's autonomy session);
the self-direction inbox and the crystal of directives.

    pressure.py   the signals, their weights and the one query that reads them
    models.py     settings (the switch), pressure samples, decisions, inbox marks, producer runs
    services.py   the beat sweep (sample, decide, claim), the Sit start, settings, the inbox
    focus.py      the focus pre-pass (role `focus`, one model call) and its deterministic fallback
    producers/    the reflective and topical producers (they use autonomy's models; autonomy's
                  services and tasks start them, never the other way round)
"""
