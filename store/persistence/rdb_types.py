"""rdb.h's numbers: the RDB file's opcodes, its value types, and the flags and sizes of
the structures inside values (quicklist node containers, stream entry flags), shared by the
encoder (rdb_encoder.py), the value readers (rdb_values.py) and the file reader
(rdb_loader.py). Plain constants: nothing here runs.
"""

import struct

OP_FUNCTION2 = 245
OP_FUNCTION_PRE_GA = 246
OP_MODULE_AUX = 247
OP_IDLE = 248
OP_FREQ = 249
OP_AUX = 250
OP_RESIZEDB = 251
OP_EXPIRETIME_MS = 252
OP_EXPIRETIME = 253
OP_SELECTDB = 254
OP_EOF = 255

T_STRING = 0
T_LIST = 1
T_SET = 2
T_ZSET = 3
T_HASH = 4
T_ZSET_2 = 5
T_MODULE = 6
T_MODULE_2 = 7
T_HASH_ZIPMAP = 9
T_LIST_ZIPLIST = 10
T_SET_INTSET = 11
T_ZSET_ZIPLIST = 12
T_HASH_ZIPLIST = 13
T_LIST_QUICKLIST = 14
T_STREAM_LISTPACKS = 15
T_HASH_LISTPACK = 16
T_ZSET_LISTPACK = 17
T_LIST_QUICKLIST_2 = 18
T_STREAM_LISTPACKS_2 = 19

QUICKLIST_PLAIN = 1  # quicklist node containers
QUICKLIST_PACKED = 2
QUICKLIST_NODE_BYTES = 8192  # list-max-listpack-size -2, the default
STREAM_DELETED = 1  # stream entry flags
STREAM_SAMEFIELDS = 2
U64 = (1 << 64) - 1

I64 = struct.Struct('<q')  # a deadline, a stream's times
F64 = struct.Struct('<d')  # a sorted set's binary score (RDB_TYPE_ZSET_2)
