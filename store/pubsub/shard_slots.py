"""A cluster node that stops serving a hash slot drops the slot's shard channels (Redis's
removeChannelsInSlot): each of their subscribers is unsubscribed from them and told, as if
it had sent SUNSUBSCRIBE. The channels come from the ChannelStore's slot index
(channel_store.py), so dropping a slot costs its channels' subscribers, not a scan.
"""

from __future__ import annotations

from .channel_store import SHARD_CHANNELS
from .dispatch import PubSub, Snapshot


def remove_shard_channels_in_slot(hub: PubSub, slot: int) -> None:
    """Channels in byte order, each one's subscribers in the order they subscribed.
    Messages already queued for a subscriber go out before its sunsubscribe push."""
    store = hub.store
    for channel in store.shard_channels_in_slot(slot):
        snapshot: Snapshot = store.subscribers(channel, SHARD_CHANNELS) or ()
        for s in snapshot:
            conn = s.conn
            if s.queue:
                data = b''.join(s.queue)
                hub.queued -= s.qbytes
                s.qbytes = 0
                s.queue.clear()
                conn.out.append(data)
            frames = hub.unsubscribe(conn, SHARD_CHANNELS, [channel])
            if frames:  # (already in the output with CLIENT REPLY OFF)
                conn.out.append(bytes(frames))
            conn.flush_later()
