"""Deadline index and active expiry; see index.py for the structure and its costs."""

from .index import DeadlineIndex

__all__ = ['DeadlineIndex']
