"""The point-in-time snapshot (lead's module; see __init__.py).

Encoder protocol, shared by rdb_codec.RdbEncoder and aof.AofEncoder; each method returns
the bytes to write, and the snapshot writes them in file order:

    checksum: bool                       # whether footer() wants the CRC64 of the file
    header() -> bytes                    # magic + aux fields (RDB), or nothing
    functions(codes: list[bytes]) -> bytes   # the FUNCTION libraries' source codes
    select_db(db, size, expires) -> bytes    # before a database's keys (sizes at start)
    key(key, value, deadline) -> bytes   # one key; deadline: ms since the epoch or None
    footer(crc: int) -> bytes            # EOF + checksum (RDB), or nothing
"""
