"""Who holds expiry back, in one place.

Redis deletes a key at its deadline only on a master whose clients are not paused: a
replica waits for its master's DEL (past its deadline a key reads as missing there, and
stays), and CLIENT PAUSE or FAILOVER's pause freezes the dataset, lazily and actively
alike; DEBUG SET-ACTIVE-EXPIRE turns the active part off on its own. Each of these holds
the gate for its own reason and releases it when it ends; the gate alone turns the
active-expiry timer and the keyspace's lazy deletion on and off, so that one of them
ending never undoes what another, or DEBUG, still asks for (a pause that saved the
timer's state and restored it at its end re-enabled an expiry DEBUG had turned off
meanwhile).
"""

from __future__ import annotations

from typing import Protocol

from .active import ActiveExpiry


class _Keyspace(Protocol):
    expire_paused: bool  # lazy expiry answers "missing" without deleting


class ExpiryGate:
    __slots__ = ('timer', 'keyspace', 'active_on', 'holds')

    def __init__(self, timer: ActiveExpiry, keyspace: _Keyspace) -> None:
        self.timer = timer
        self.keyspace = keyspace
        self.active_on = True  # DEBUG SET-ACTIVE-EXPIRE
        self.holds: set[str] = set()  # 'pause', 'replica', 'shutdown'

    def hold(self, why: str) -> None:
        self.holds.add(why)
        self._apply()

    def release(self, why: str) -> None:
        self.holds.discard(why)
        self._apply()

    def set_active(self, on: bool) -> None:
        """DEBUG SET-ACTIVE-EXPIRE: the active part only; lazy expiry goes on."""
        self.active_on = on
        self._apply()

    def _apply(self) -> None:
        self.keyspace.expire_paused = bool(self.holds)
        on = self.active_on and not self.holds
        if on != self.timer.enabled:
            self.timer.set_enabled(on)
