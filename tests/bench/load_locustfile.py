"""The clients of the load benchmark (tests/bench/bench_load.py runs this file with locust; it is not
a test module). Each client opens a session, then loops without pause over reads (the delta list, a
delta by id, search, the fire list), delta writes and session messages. FATHOM_BENCH_KEY is an owner's
API key of the workspace the bench seeded."""

import itertools
import os
import random

from locust import FastHttpUser, constant, task

WORDS = ("rover harbour tide lantern granite orbit meadow ledger compass ember quartz delta signal "
         "archive glacier beacon").split()
_serial = itertools.count()


def _phrase(words: int) -> str:
    return " ".join(random.choices(WORDS, k=words))


class Client(FastHttpUser):
    wait_time = constant(0)  # 50 clients each with one request always in flight: the harshest case

    def on_start(self):
        self.headers = {"Authorization": f"Bearer {os.environ['FATHOM_BENCH_KEY']}"}
        with self.client.post("/v1/sessions", json={"title": "load"}, headers=self.headers, name="POST /v1/sessions",
                              catch_response=True) as response:
            self.session_id = response.json()["id"] if response.status_code == 201 else None
        self.delta_ids = []

    @task(4)
    def list_deltas(self):
        self.client.get("/v1/deltas?kind=note", headers=self.headers, name="GET /v1/deltas")

    @task(2)
    def get_delta(self):
        if self.delta_ids:
            self.client.get(f"/v1/deltas/{random.choice(self.delta_ids)}", headers=self.headers,
                            name="GET /v1/deltas/{id}")

    @task(3)
    def search(self):
        self.client.post("/v1/search", json={"query": _phrase(3), "depth": "shallow", "limit": 10},
                         headers=self.headers, name="POST /v1/search")

    @task(2)
    def list_fires(self):
        self.client.get("/v1/fires", headers=self.headers, name="GET /v1/fires")

    @task(3)
    def write_delta(self):
        with self.client.post("/v1/deltas", json={"content": f"{_phrase(12)} #{next(_serial)}",
                                                  "tags": ["kind:note"], "source": "load"},
                              headers=self.headers, name="POST /v1/deltas", catch_response=True) as response:
            if response.status_code == 201:
                self.delta_ids = (self.delta_ids + [response.json()["id"]])[-20:]

    @task(1)
    def send_message(self):
        if self.session_id:
            self.client.post(f"/v1/sessions/{self.session_id}/messages",
                             json={"content": f"What do you remember about the {_phrase(2)}?"},
                             headers=self.headers, name="POST /v1/sessions/{id}/messages")
