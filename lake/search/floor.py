"""The vector relevance floor, calibrated for whichever embedder is in use.

A cosine distance means different things to different embedders: unrelated texts sit near 1.0
for the hashing embedder and near 0.95 for all-MiniLM-L6-v2, and they spread differently around
it. So the floor is not a constant: it is read off the embedder's own distribution of distances
between texts that have nothing to do with each other (REFERENCE: thirty sentences on thirty
subjects, 435 pairs), as its mean minus FLOOR_SPREADS standard deviations. A neighbour that is no
closer than that is no closer than unrelated text can come by chance, and is no match.

FLOOR_SPREADS was chosen on tests/bench/bench_retrieval.py and holds across embedders: for
hashing-v2 it gives 0.79 (the floor once calibrated by hand on that bench was 0.78), for
hashing-v3 0.75 (character n-grams shared by chance bring unrelated texts a little closer), for
all-MiniLM-L6-v2 0.62; on both corpora and with every one of them, nonsense and small-words
queries' nearest deltas lie beyond it (hashing-v3 takes its n-grams from stems, not words as
written, for that: "anything" as written shares "thing>", "hing>" and "ing>" with "thing", and
sat inside the floor). Computed once per process and embedder (one embedding call of REFERENCE)."""

import logging
import statistics
from functools import lru_cache

from lake.embedders import Embedder, EmbeddingFailed, EmbeddingUnavailable

logger = logging.getLogger(__name__)

FLOOR_SPREADS = 4.0
NO_FLOOR = 1.0  # an embedder that cannot be calibrated (down at the first search) gets none until it can
REFERENCE = (
    "The tide came in faster than the fishermen expected.",
    "She renewed her passport two weeks before the flight.",
    "Our quarterly revenue grew by eight percent.",
    "The violinist tuned her instrument backstage.",
    "Rain is forecast for the whole weekend in the mountains.",
    "He replaced the bicycle chain and oiled the gears.",
    "The toddler refused to eat his broccoli at dinner.",
    "A new species of frog was found in the rainforest.",
    "The committee postponed the vote on the housing budget.",
    "I baked a lemon cake for my grandmother's birthday.",
    "The server crashed after the database ran out of disk space.",
    "They painted the fence white last summer.",
    "The museum opens a Roman coins exhibition in May.",
    "My knee hurts after the long hike down the valley.",
    "The striker scored twice in the second half.",
    "Please water the orchids on the windowsill while I am away.",
    "The train to the airport was cancelled because of a strike.",
    "Astronomers photographed a comet passing near Jupiter.",
    "The landlord raised the rent for the flat upstairs.",
    "We adopted a rescue greyhound named Pilot.",
    "The chess club meets every Tuesday evening in the library.",
    "Our dentist recommends an electric toothbrush.",
    "The recipe needs two cups of flour and a pinch of salt.",
    "Volunteers cleaned plastic from the beach on Sunday.",
    "The printer on the third floor is jammed again.",
    "Grandpa told stories about the war until midnight.",
    "The vineyard harvested its grapes early this year.",
    "A power cut left the whole street dark for hours.",
    "She is learning to knit a scarf for the winter.",
    "The lawyer filed the appeal on Friday afternoon.",
)


def vector_floor(embedder: Embedder) -> float:
    """The cosine distance beyond which a neighbour is no match, for this embedder (see above)."""
    try:
        return _calibrated(embedder)
    except (EmbeddingUnavailable, EmbeddingFailed) as exc:
        logger.warning("no vector floor for %s yet: %s", embedder.name, exc)
        return NO_FLOOR


@lru_cache(maxsize=8)
def _calibrated(embedder: Embedder) -> float:
    vectors = embedder.embed(list(REFERENCE))
    distances = [1 - sum(x * y for x, y in zip(a, b, strict=True))
                 for i, a in enumerate(vectors) for b in vectors[i + 1:]]
    return statistics.fmean(distances) - FLOOR_SPREADS * statistics.pstdev(distances)
