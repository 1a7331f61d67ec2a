"""Redis channels read without waiting, and the version numbers built on them: a version is answered
from memory until a bump anywhere is published, then read again at once."""

import socket
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
    channels._versions.pubsub.connection._sock.shutdown(socket.SHUT_RDWR)  # the subscription drops
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


def test_within_one_look_a_channel_is_read_once_and_what_came_later_is_heard_after():
    channel, quiet_channel = f"test:channel:{uuid.uuid4().hex}", f"test:channel:{uuid.uuid4().hex}"
    subscription, quiet = channels.Subscription(channel), channels.Subscription(quiet_channel)
    subscription.take(), quiet.take()
    get_redis().publish(channel, "before")
    with channels.one_look():  # one poll: `subscription` has something to read, `quiet` nothing
        get_redis().publish(quiet_channel, "during")
        assert quiet.take().messages == []
        assert subscription.take().messages == ["before"]
        get_redis().publish(channel, "during")
        assert subscription.take().messages == []  # read once in the look
    assert subscription.take().messages == quiet.take().messages == ["during"]


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
