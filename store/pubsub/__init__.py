"""Pub/sub: the ChannelStore (channel_store.py) and message dispatch with backpressure
(dispatch.py); Redis glob matching is store/glob.py.

The server creates one `PubSub` hub (`server.pubsub`); it registers its disconnect, RESET
and cron hooks and is the publisher of the keyspace's event sink (store/events.py), so
keyspace notifications take the same path as PUBLISH. Commands live in store/commands/pubsub.py.
"""

from __future__ import annotations

from typing import Any

from .channel_store import CHANNELS, PATTERNS, SHARD_CHANNELS, ChannelStore
from .dispatch import PubSub, Subscriber


def pubsub_info_fields(server: Any) -> list[tuple[str, int]]:
    """INFO fields of the pub/sub layer as [(name, value)], for the Stats section:
    pubsub_channels, pubsub_patterns, pubsubshard_channels (as Redis 7.0), then
    pubsub_queued_bytes (control queues + subscriber transport buffers, what
    publish-buffer-limit bounds), pubsub_control_queue_bytes, pubsub_transport_buffer_bytes,
    pubsub_blocked_publishers (waiting now), pubsub_publisher_waits (total),
    pubsub_messages_delivered, client_output_buffer_limit_disconnections."""
    hub: PubSub | None = getattr(server, 'pubsub', None)
    if hub is None:
        return []
    return hub.info_fields()


__all__ = [
    'CHANNELS',
    'PATTERNS',
    'SHARD_CHANNELS',
    'ChannelStore',
    'PubSub',
    'Subscriber',
    'pubsub_info_fields',
]
