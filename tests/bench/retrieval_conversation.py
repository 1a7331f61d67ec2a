"""The retrieval benchmark's conversational corpus: months of chat between two friends, one delta a
turn, each session on its own day, generated deterministically from a seed.

Each session mixes small talk with events of the speakers' lives (a pet adopted, a course begun, a
relative's new job); a later session may pick an event up again, and other turns reuse an event's
words in another sense, so words alone do not give the answer away. Questions, with their gold
turns (grade 2):
- chat-single: one turn answers, asked with its own words;
- chat-paraphrase: the same, asked in other words (synonyms, no word of the turn's but names);
- chat-multi: two turns of different sessions answer together (a relative named in one, the city
  they moved to in the other);
- chat-temporal: the answer is a turn's date ("when did ...", "which came first ...": one or two
  turns, whose dates answer it).
"""

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

SPEAKERS = ("Maya", "Leo")
SESSIONS = 26
CLASSES = ("chat-single", "chat-paraphrase", "chat-multi", "chat-temporal")


@dataclass
class Turn:
    speaker: str
    text: str
    session: int = 0
    at: datetime | None = None
    id: str = ""

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class ChatQuestion:
    kind: str
    text: str
    turns: list = field(default_factory=list)  # the Turn objects that answer


# An event: what its speaker says, the other's reply, the question in the turn's words, the same in
# other words, and "when did" (about the speaker's turn). Slots: {a} the speaker, {b} the other, and
# the event's own, filled from SLOTS.
EVENTS = [
    ("We finally adopted a {pet} from the animal shelter, we named it {petname}!",
     "Oh that is adorable, send me pictures of {petname}.",
     "What animal did {a} adopt from the shelter?",
     "Which creature did {a} bring home from the rescue centre?",
     "When did {a} adopt {petname}?"),
    ("I signed up for a {course} class at the community college, first lesson is on Thursday.",
     "Nice, you always wanted to try that.",
     "Which class did {a} sign up for at the community college?",
     "What new hobby is {a} learning in evening lessons?",
     "When did {a} sign up for the {course} class?"),
    ("My landlord finally fixed the {appliance}, it had been broken for three weeks.",
     "Three weeks, that is ridiculous.",
     "What did {a}'s landlord fix?",
     "Which household device got repaired at {a}'s flat after weeks out of order?",
     "When was the {appliance} at {a}'s place fixed?"),
    ("I ran the {race} last weekend, finished in {minutes} minutes!",
     "Wow, congratulations, that is a great time.",
     "How long did it take {a} to finish the {race}?",
     "What was {a}'s time in the running event?",
     "When did {a} run the {race}?"),
    ("I got a promotion at work, I am now {title} of the {team} team.",
     "You deserve it, we should celebrate.",
     "What promotion did {a} get at work?",
     "What is {a}'s new job title after moving up at the company?",
     "When did {a} get promoted?"),
    ("We booked a trip to {place} for the summer holidays, flights are already paid.",
     "Lucky you, I have never been there.",
     "Where is {a} going for the summer holidays?",
     "Which destination did {a} reserve for the vacation?",
     "When did {a} book the trip to {place}?"),
    ("I broke my {bone} playing {sport}, the cast stays on for six weeks.",
     "Ouch, get well soon.",
     "What did {a} break playing {sport}?",
     "Which injury did {a} get during a match?",
     "When did {a} break the {bone}?"),
    ("I am reading {book} for my book club, it is slow but beautiful.",
     "I read that one years ago, the ending is great.",
     "Which book is {a} reading for the book club?",
     "What novel has {a}'s reading group chosen?",
     "When did {a} start reading {book}?"),
    ("I sold my old {vehicle} and bought an electric one, charging it at home is so easy.",
     "How far can it go on one charge?",
     "What did {a} sell before buying an electric one?",
     "What kind of transport did {a} get rid of to go battery powered?",
     "When did {a} sell the {vehicle}?"),
    ("Our {room} is finally painted, we went with a dark green on the walls.",
     "Dark green sounds bold, I like it.",
     "What colour did {a} paint the {room}?",
     "Which shade did {a} choose when redecorating?",
     "When did {a} finish painting the {room}?"),
    ("I started volunteering at the {charity} on Saturday mornings.",
     "That is really kind of you.",
     "Where does {a} volunteer on Saturdays?",
     "Which organisation does {a} help out at every weekend?",
     "When did {a} start volunteering at the {charity}?"),
    ("I planted {plant} on the balcony, the first ones are already coming up.",
     "Homegrown ones taste so much better.",
     "What did {a} plant on the balcony?",
     "Which crop is {a} growing outside the flat?",
     "When did {a} plant the {plant}?"),
]
SLOTS = {
    "pet": ["beagle puppy", "grey kitten", "rabbit", "border collie", "tabby cat", "parrot"],
    "petname": ["Biscuit", "Pepper", "Noodle", "Juniper", "Waffles", "Ziggy", "Marble", "Olive"],
    "course": ["pottery", "salsa dancing", "Japanese", "woodcarving", "watercolour painting", "improv theatre"],
    "appliance": ["washing machine", "boiler", "dishwasher", "fridge", "oven", "shower"],
    "race": ["city half marathon", "10k charity run", "trail race", "park run", "harbour 5k"],
    "minutes": ["95", "52", "118", "27", "64", "31"],
    "title": ["head", "lead", "manager", "director"],
    "team": ["design", "logistics", "data", "support", "marketing", "research"],
    "place": ["Crete", "Lisbon", "the Lake District", "Kyoto", "Iceland", "Sicily", "Vancouver"],
    "bone": ["wrist", "ankle", "collarbone", "finger", "toe"],
    "sport": ["football", "basketball", "volleyball", "hockey", "squash"],
    "book": ["Middlemarch", "The Remains of the Day", "Wolf Hall", "Moby Dick", "Anna Karenina", "Beloved"],
    "vehicle": ["diesel hatchback", "scooter", "motorbike", "camper van", "petrol estate"],
    "room": ["kitchen", "bedroom", "hallway", "living room", "bathroom"],
    "charity": ["food bank", "animal rescue", "homeless shelter", "library", "hospice shop"],
    "plant": ["tomatoes", "strawberries", "chillies", "basil", "lettuce", "beans"],
}
# Two turns of different sessions: a relative and where they went, then a plan that names only the
# relative; the question needs both.
LINKS = [
    ("My {relative} {name} just moved to {city} for a new job as a {job}.",
     "{name} invited me to stay next month, I need to book the train.",
     "Which city is {a} travelling to next month?"),
    ("My {relative} {name} started working as a {job} at the hospital in {city}.",
     "{name} won an award at work this week, the whole family is so proud.",
     "In which city does {a}'s award-winning relative work?"),
    ("My {relative} {name} opened a small bakery in {city}.",
     "{name} is sending me a box of pastries for my birthday.",
     "Where do the birthday pastries {a} is getting come from?"),
]
LINK_SLOTS = {
    "relative": ["sister", "brother", "cousin", "aunt", "uncle", "niece"],
    "name": ["Ruth", "Sam", "Ines", "Tariq", "Greta", "Owen", "Lena", "Marco", "Priya", "Jonah", "Elif", "Bruno"],
    "city": ["Porto", "Edinburgh", "Bordeaux", "Krakow", "Valencia", "Galway", "Utrecht", "Bologna", "Bergen",
             "Seville", "Ghent", "Tallinn"],
    "job": ["nurse", "teacher", "architect", "chef", "engineer", "pharmacist", "baker"],
}
# Turns that reuse events' words in other senses, and small talk.
DISTRACTORS = [
    "The shelter by the bus stop has a new roof.", "My neighbour's {pet} barks all night.",
    "The college car park is closed for repairs.", "I watched a documentary about {place} yesterday.",
    "There is a sale on {vehicle}s at the garage.", "The {charity} posted a thank you note.",
    "I saw a poster for a {course} workshop.", "My {appliance} makes a weird noise too.",
    "The book club at work picked a thriller.", "I had {plant} in my salad for lunch.",
    "The {race} closed half the roads downtown.", "Our {room} light keeps flickering.",
    "My {relative} called me about the holidays.", "I might visit {city} one day.",
]
SMALL_TALK = [
    "How was your weekend?", "Not bad, just tired.", "Haha, true.", "Did you watch the match last night?",
    "I am making pasta tonight.", "Talk later!", "It has been raining all day here.", "Same here, honestly.",
    "Coffee tomorrow?", "Sounds good to me.", "I cannot believe it is already Friday.", "Work was long today.",
    "Ha, I know the feeling.", "Have a good evening!", "Did you get my message?", "Yes, sorry, busy day.",
]


def conversation(seed: int) -> tuple[list[Turn], list[ChatQuestion]]:
    """The turns in time order (each with its session and time) and the questions about them."""
    rng = random.Random(seed)
    sessions: list[list[Turn]] = [[] for _ in range(SESSIONS)]
    questions: list[ChatQuestion] = []
    events: list[Turn] = []  # the speakers' event turns, for the "which came first" questions
    used = set()
    for s in range(SESSIONS):
        for _ in range(2):
            a, b = rng.sample(SPEAKERS, 2)
            template = EVENTS[rng.randrange(len(EVENTS))]
            slots = {name: rng.choice(values) for name, values in SLOTS.items()}
            key = (a, EVENTS.index(template))
            if key in used:
                continue
            used.add(key)
            said, reply, single, paraphrase, when = (part.format(a=a, b=b, **slots) for part in template)
            turn = Turn(a, said, s)
            sessions[s] += [turn, Turn(b, reply, s)]
            events.append(turn)
            questions += [ChatQuestion("chat-single", single, [turn]),
                          ChatQuestion("chat-paraphrase", paraphrase, [turn]),
                          ChatQuestion("chat-temporal", when, [turn])]
    for index, (first, then, question) in enumerate(LINKS * 4):
        a = SPEAKERS[index % 2]
        slots = {name: values[(index * 5 + offset) % len(values)]
                 for offset, (name, values) in enumerate(LINK_SLOTS.items())}
        early = rng.randrange(SESSIONS - 6)
        late = rng.randrange(early + 3, SESSIONS)
        turns = (Turn(a, first.format(a=a, **slots), early), Turn(a, then.format(a=a, **slots), late))
        sessions[early].append(turns[0])
        sessions[late].append(turns[1])
        questions.append(ChatQuestion("chat-multi", question.format(a=a, **slots), list(turns)))
    for s in range(SESSIONS):
        for _ in range(rng.randint(2, 4)):
            slots = {name: rng.choice(values) for name, values in (SLOTS | LINK_SLOTS).items()}
            sessions[s].append(Turn(rng.choice(SPEAKERS), rng.choice(DISTRACTORS).format(**slots), s))
        for _ in range(rng.randint(4, 8)):
            sessions[s].insert(rng.randrange(len(sessions[s]) + 1), Turn(rng.choice(SPEAKERS), rng.choice(SMALL_TALK), s))
    for _ in range(len(events) // 3):
        first, second = sorted(rng.sample(events, 2), key=lambda turn: turn.session)
        if first.session == second.session:
            continue
        questions.append(ChatQuestion(
            "chat-temporal", f"Which happened first: {_gist(first)}, or {_gist(second)}?", [first, second]))
    start = datetime(2025, 1, 6, 19, 0, tzinfo=UTC)
    turns = []
    for s, session in enumerate(sessions):
        day = start + timedelta(days=5 * s + rng.randint(0, 3))
        for position, turn in enumerate(session):
            turn.at = day + timedelta(minutes=2 * position)
            turns.append(turn)
    return turns, questions


def _gist(turn: Turn) -> str:
    """A short description of an event turn for an ordering question: its speaker and first words."""
    words = turn.text.split()
    return f"{turn.speaker} saying \"{' '.join(words[:7]).rstrip(',.!')}\""
