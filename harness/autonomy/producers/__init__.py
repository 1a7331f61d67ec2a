"""The producers (seed 000's "Producer architecture"): the reflective agent (levels 1-3, identity-
and narrative-shaped provenance) and the topical agent (a time window: level-1 episodes; an L2
pass: level-2 topics). Each run is one model call whose proposals go through the proposals service
and its gate (L1/L2 approved at once, L3+ wait for an operator); every proposal also lands in the
lake as a kind:proposal delta and its decision as a kind:decision delta, so the feed shows them."""
