"""Redis channels read without waiting, and the version numbers built on them: a version is answered
from memory until a bump anywhere is published, then read again at once."""

import uuid

import pytest
import redis
from django.conf import settings
from redis.exceptions import RedisError

from fathom import channels
from fathom.redis_client import get_redis


def another_process() -> redis.Redis:
    """A client of its own, as another process of the stack would have."""
    return redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)


def test_a_version_is_answered_from_memory_until_it_is_bumped():
    key = f"test:version:{uuid.uuid4().hex}"
    assert channels.version(key) == "0"
    get_redis().set(key, "41")  # changed without a bump: nobody is told
    assert channels.version(key) == "0"
    channels.version_bump(key)
    assert channels.version(key) == "42"


def test_a_bump_in_another_process_is_heard_at_the_next_read():
    key = f"test:version:{uuid.uuid4().hex}"
    assert channels.version(key) == "0"
    other = another_process()
    other.incr(key)
    other.publish(channels.VERSIONS_CHANNEL, key)
    assert channels.version(key) == "1"  # no wait: Redis delivered the message before it answered the publish


def test_a_subscription_that_drops_forgets_every_version():
    key = f"test:version:{uuid.uuid4().hex}"
    assert channels.version(key) == "0"
    get_redis().set(key, "7")
    get_redis().client_kill_filter(_type="pubsub")  # Redis closes every subscription: this process's drops
    assert channels.version(key) == "7"  # subscribed again, and every version read anew


def test_a_subscription_hears_what_was_published_since_its_last_look():
    channel = f"test:channel:{uuid.uuid4().hex}"
    subscription = channels.Subscription(channel)
    assert subscription.take().resubscribed
    get_redis().publish(channel, "one")
    get_redis().publish(channel, "two")
    heard = subscription.take()
    assert heard.messages == ["one", "two"] and not heard.resubscribed
    assert subscription.take().messages == []


def test_a_message_is_heard_once_by_each_subscription():
    channel = f"test:channel:{uuid.uuid4().hex}"
    first, second = channels.Subscription(channel), channels.Subscription(channel)
    first.take(), second.take()
    another_process().publish(channel, "once")

    assert first.take().messages == second.take().messages == ["once"]
    assert first.take().messages == second.take().messages == []


def test_a_subscription_whose_confirmation_never_came_is_read_at_the_next_look(monkeypatch):
    channel = f"test:channel:{uuid.uuid4().hex}"
    subscription = channels.Subscription(channel)
    confirmed = redis.client.PubSub.get_message
    monkeypatch.setattr(redis.client.PubSub, "get_message", lambda *args, **kwargs: None)
    with pytest.raises(RedisError):
        subscription.take()
    monkeypatch.setattr(redis.client.PubSub, "get_message", confirmed)
    get_redis().publish(channel, "meanwhile")

    heard = subscription.take()
    assert heard.resubscribed and heard.messages == ["meanwhile"]


def test_a_versioned_cache_keeps_its_answers_until_the_version_is_bumped():
    key = f"test:version:{uuid.uuid4().hex}"
    cache = channels.VersionedCache(lambda: channels.version(key))
    reads = []

    def read(answer):
        reads.append(answer)
        return answer

    # given answers read once, None among them
    assert cache.get("a", lambda: read(1)) == 1 and cache.get("b", lambda: read(None)) is None
    # then they are held: not read again
    assert cache.get("a", lambda: read(2)) == 1 and cache.get("b", lambda: read(2)) is None
    assert cache.held("a") == (True, 1) and cache.held("c") == (False, None)
    # and after a bump, every answer is read again
    channels.version_bump(key)
    assert cache.held("a") == (False, None)
    assert cache.get("a", lambda: read(3)) == 3
    assert reads == [1, None, 3]
