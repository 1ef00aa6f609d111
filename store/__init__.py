"""A Redis-protocol data store whose specialty is key expiry as a timely event stream."""

from .embed import EmbeddedServer

__all__ = ['EmbeddedServer']
