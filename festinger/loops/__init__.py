"""Festinger's loop detector and its mitigations (seed 002, T02 and T03): see `festinger.loops.guard`."""
