"""Festinger's loop detector and its mitigations (seed 002, T02 and T03): `guard` (the detector, the
mitigations, the model middleware) and `conversations` (which conversation a proxied call belongs to)."""
